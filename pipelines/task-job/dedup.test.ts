import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deduplicate, type DedupKey } from './dedup.js';
import { comparableText } from './normalise.js';

function words(seed: number, count: number): string {
  let state = seed;
  return Array.from({ length: count }, () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return `t${state % 10000}`;
  }).join(' ');
}

type Row = DedupKey & { text: string };
const row = (id: string, text: string, extra: Partial<DedupKey> = {}): Row => ({ id, family: id, split: 'train', priority: 0, text: comparableText([text]), ...extra });
const textOf = (r: Row): string => r.text;

describe('deduplicate', () => {
  it('drops exact copies that differ only in layout, keeping the first', () => {
    const base = words(1, 120);
    const result = deduplicate([row('a', base), row('b', base.replaceAll(' ', '\n  ')), row('c', words(2, 120))], (r) => r, textOf);
    assert.deepEqual(result.kept, [0, 2]);
    assert.equal(result.exactDuplicates, 1);
    assert.match(result.rejects[0]!.reason, /exact duplicate of a/);
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
