import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { deduplicate, type DedupKey } from './dedup.js';
import type { ComparableRow } from './fingerprint.js';
import { checkoutFile } from '../../../schemas/index.js';

function words(seed: number, count: number): string {
  let state = seed;
  return Array.from({ length: count }, () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return `t${state % 10000}`;
  }).join(' ');
}

type Row = DedupKey & { content: ComparableRow };
const row = (id: string, text: string, extra: Partial<DedupKey> = {}): Row => ({ id, family: id, split: 'train', priority: 0, content: { prose: [text], code: [] }, ...extra });
const textOf = (r: Row): ComparableRow => r.content;
const codeRow = (id: string, description: string, code: readonly string[]): Row => ({ id, family: id, split: 'train', priority: 0, content: { prose: [description], code } });

type Bundled = { id: string; description: string; buggy_source: string; visible_tests: string; hidden_tests: string };
const bundle = (): Bundled[] =>
  readFileSync(checkoutFile(join('tasks', 'repair-bundle.jsonl')), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Bundled);
const bundledRow = (task: Bundled, id = task.id, edit: (code: string) => string = (code) => code): Row =>
  codeRow(id, task.description, [edit(task.buggy_source), edit(task.visible_tests), edit(task.hidden_tests)]);

describe('deduplicate', () => {
  it('drops exact copies that differ only in layout, keeping the first', () => {
    const base = words(1, 120);
    const result = deduplicate([row('a', base), row('b', base.replaceAll(' ', '\n  ')), row('c', words(2, 120))], (r) => r, textOf);
    assert.deepEqual(result.kept, [0, 2]);
    assert.equal(result.exactDuplicates, 1);
    assert.match(result.rejects[0]!.reason, /exact duplicate of a/);
    assert.equal(result.rejects[0]!.of, 0);
  });

  it('takes code that differs only in whitespace the code does not care about for an exact duplicate, and indentation for a difference', () => {
    const [task] = bundle();
    const layouts: Record<string, (code: string) => string> = {
      'trailing spaces': (code) => code.replaceAll('\n', '  \t\n'),
      CRLF: (code) => code.replaceAll('\n', '\r\n'),
      'blank lines': (code) => code.replaceAll('\n\n', '\n\n\n\n').replace('\n', '\n\n'),
      'no trailing newline': (code) => code.trimEnd(),
      'extra trailing newlines': (code) => `${code}\n\n\n`,
      'a continuation and spacing': (code) => code.replace('(', '( ').replace(' = ', ' = \\\n    '),
    };
    const rows = [bundledRow(task!), ...Object.entries(layouts).map(([name, edit]) => bundledRow(task!, name.replaceAll(' ', '-'), edit))];
    const result = deduplicate(rows, (r) => r, textOf);
    assert.deepEqual(result.kept, [0], result.rejects.map((r) => `${rows[r.index]!.id}: ${r.reason}`).join('\n'));
    assert.equal(result.exactDuplicates, Object.keys(layouts).length);
    assert.ok(result.rejects.every((reject) => reject.category === 'exact duplicate' && reject.of === 0 && reject.similarity === 1));

    // Moving a statement out of its block changes what the code does: not an exact duplicate.
    const dedented = 'def f(xs):\n    for x in xs:\n        print(x)\n        return x\n';
    const moved = 'def f(xs):\n    for x in xs:\n        print(x)\n    return x\n';
    const pair = deduplicate([codeRow('a', 'first', [dedented]), codeRow('b', 'first', [moved])], (r) => r, textOf, { threshold: 1 });
    assert.equal(pair.exactDuplicates, 0);
    // A string literal's inner spaces are content.
    const strings = deduplicate([codeRow('a', 'first', ['x = "a  b"\n']), codeRow('b', 'first', ['x = "a b"\n'])], (r) => r, textOf, { threshold: 1 });
    assert.equal(strings.exactDuplicates, 0);
  });

  it('catches a copy whose variables and functions were renamed as a near duplicate, and tells apart the bundled tasks', () => {
    const tasks = bundle();
    const [task] = tasks;
    // The function, its parameters and locals renamed, in the module and in the tests alike (builtins stay).
    const renames = new Map([['binary_search', 'find_position'], ['items', 'values'], ['target', 'wanted'], ['lo', 'left'], ['hi', 'right'], ['mid', 'middle']]);
    assert.ok([...renames.keys()].every((name) => task!.buggy_source.includes(name)), 'the first bundled task is the binary search');
    const rename = (code: string): string => code.replace(/\b[a-z_][a-z0-9_]*\b/gi, (name) => renames.get(name) ?? name);
    const renamed = bundledRow(task!, 'renamed', rename);
    const result = deduplicate([...tasks.map((t) => bundledRow(t)), renamed], (r) => r, textOf);
    assert.equal(result.exactDuplicates, 0);
    assert.deepEqual(result.rejects.map((r) => [r.category, r.index, r.of]), [['near duplicate', tasks.length, 0]]);
    assert.match(result.rejects[0]!.reason, new RegExp(`^near-duplicate of ${task!.id} \\(estimated similarity (0\\.9\\d|1\\.00)`));
  });

  it('keeps the higher-priority copy of a duplicate pair', () => {
    const text = words(3, 120);
    const result = deduplicate([row('low', text), row('high', text, { priority: 5 })], (r) => r, textOf);
    assert.deepEqual(result.kept, [1]);
  });

  it('drops near-duplicates across families but not within one', () => {
    const base = words(4, 200).split(' ');
    const near = [...base];
    near[50] = 'changed';
    const rows = [row('p1-a', base.join(' '), { family: 'p1' }), row('p1-b', near.join(' '), { family: 'p1' }), row('p2', near.join(' ').replace('changed', 'other'), { family: 'p2' })];
    const result = deduplicate(rows, (r) => r, textOf, { threshold: 0.8 });
    assert.deepEqual(result.kept, [0, 1]);
    assert.equal(result.nearDuplicates, 1);
    assert.equal(result.rejects[0]!.category, 'near duplicate');
  });

  it('finds eval rows that are near-duplicates of train rows and drops the train side by default', () => {
    const text = words(5, 200);
    const rows = [row('train-1', text), row('eval-1', `${text} extra`, { split: 'eval' }), row('train-2', words(6, 200))];
    const result = deduplicate(rows, (r) => r, textOf);
    assert.equal(result.contaminationHits, 1);
    assert.deepEqual(result.kept, [1, 2]);
    assert.match(result.rejects[0]!.reason, /contaminates the eval split: near-duplicate of eval task eval-1/);
    assert.deepEqual(deduplicate(rows, (r) => r, textOf, { contamination: 'drop-eval' }).kept, [0, 2]);
    assert.throws(() => deduplicate(rows, (r) => r, textOf, { contamination: 'fail' }), /1 eval task\(s\) are near-duplicates of train tasks[\s\S]*train train-1 ~ eval eval-1/);
  });
});
