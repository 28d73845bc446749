import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deduplicate, RowFingerprinter } from '../pipelines/jobs/task-job/index.js';
import { distinctRow, plantedRow, scoreRemoved, type GeneratedRow, type PlantedKind, type Truth } from './repair-rows.js';

const contentOf = (row: GeneratedRow) => ({ prose: [row.description], code: [row.buggy_source, row.visible_tests, row.hidden_tests] });

/** The first row of `kind` the generator plants (bench:dedup's data set: no broken or invalid rows). */
function firstOf(kind: PlantedKind): { index: number; row: GeneratedRow; origin: number } {
  for (let index = 0; index < 100_000; index++) {
    const planted = plantedRow(index, { invalidRows: false });
    if (planted.kind === kind) return { index, row: JSON.parse(planted.line) as GeneratedRow, origin: planted.origin };
  }
  throw new Error(`no ${kind} row in the first 100,000`);
}

test('planted copies are what their truth says: exact and layout-only copies share the exact key, a renamed copy differs only in names', () => {
  const fingerprinter = new RowFingerprinter();
  const exactKey = (row: GeneratedRow): string => fingerprinter.fingerprint(contentOf(row)).exact;
  const exact = firstOf('exact');
  assert.deepEqual({ ...exact.row, id: 'x' }, { ...distinctRow(exact.origin), id: 'x' });
  const layout = firstOf('layout');
  const original = distinctRow(layout.origin);
  assert.notEqual(layout.row.buggy_source, original.buggy_source, 'the layout differs');
  assert.match(layout.row.buggy_source, /\r\n/);
  assert.equal(exactKey(layout.row), exactKey(original), 'the same Python tokens and prose');
  const renamed = firstOf('renamed');
  const source = distinctRow(renamed.origin);
  assert.notEqual(exactKey(renamed.row), exactKey(source));
  assert.match(renamed.row.buggy_source, /x_v2/);
  const namedBack = (code: string): string => code.replace(/([a-z]+)x_v2/g, (_, word: string) => [...word].reverse().join(''));
  for (const field of ['buggy_source', 'visible_tests', 'hidden_tests', 'description', 'module'] as const) assert.equal(namedBack(renamed.row[field]), source[field], `${field}: only names differ`);
  const result = deduplicate([source, renamed.row], (row) => ({ id: row.id, family: row.id, split: 'train', priority: 0 }), contentOf, { threshold: 0.8 });
  assert.equal(result.nearDuplicates, 1, 'trialrun finds the renamed copy (identifiers are placeholders)');
  assert.equal(firstOf('contamination').row.split, 'eval');
});

test('scoring removals: a cluster of n rows should lose n - 1, whichever it keeps', () => {
  const truth = new Map<string, Truth>([
    ['a', { kind: 'distinct', origin: 0 }],
    ['a2', { kind: 'renamed', origin: 0 }],
    ['b', { kind: 'distinct', origin: 1 }],
    ['b2', { kind: 'exact', origin: 1 }],
    ['b3', { kind: 'layout', origin: 1 }],
    ['c', { kind: 'distinct', origin: 2 }],
  ]);
  assert.deepEqual(scoreRemoved(truth, ['a', 'b2', 'b3']), { removed: 3, precision: 1, recall: 1, recallByKind: { renamed: 1 } });
  const partial = scoreRemoved(truth, ['b', 'b2', 'b3', 'c']);
  assert.equal(partial.precision, 2 / 4, 'the third of a cluster of three and a distinct row are wrong');
  assert.equal(partial.recall, 2 / 3);
  assert.deepEqual(partial.recallByKind, { renamed: 0 });
  assert.throws(() => scoreRemoved(truth, ['z']), /not in the data set/);
});
