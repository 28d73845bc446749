import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planMerges } from './compact.js';
import type { DataFile } from './layout.js';

const file = (first: number, last: number, bytes: number, bucket = 'a', partition = 0): DataFile => ({
  topic: 't',
  partition,
  first: BigInt(first),
  last: BigInt(last),
  bucket,
  path: `${bucket}/${partition}/${first}`,
  bytes,
});
const paths = (plans: DataFile[][]): string[][] => plans.map((plan) => plan.map((f) => f.path));

test('merges runs of consecutive small, landed files per folder and partition, up to the target size', () => {
  const files = [file(0, 9, 10), file(10, 19, 10), file(20, 29, 500), file(30, 39, 10), file(40, 49, 10), file(50, 59, 10), file(0, 5, 10, 'b'), file(6, 7, 10, 'b'), file(0, 3, 10, 'a', 1)];
  const plans = planMerges(files, () => 1000n, { smallFileBytes: 100, targetFileBytes: 25 });
  assert.deepEqual(paths(plans), [
    ['a/0/0', 'a/0/10'],
    ['a/0/30', 'a/0/40', 'a/0/50'],
    ['b/0/0', 'b/0/6'],
  ]);
});

test('never touches ranges the sink has not recorded as landed', () => {
  const files = [file(0, 9, 10), file(10, 19, 10), file(20, 29, 10)];
  assert.deepEqual(paths(planMerges(files, () => 19n, { smallFileBytes: 100, targetFileBytes: 1000 })), [['a/0/0', 'a/0/10']]);
  assert.deepEqual(planMerges(files, () => -1n, { smallFileBytes: 100, targetFileBytes: 1000 }), []);
});
