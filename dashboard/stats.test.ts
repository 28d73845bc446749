import assert from 'node:assert/strict';
import { test } from 'node:test';
import { meanInterval, wilsonInterval } from './stats.js';

const close = (actual: number, expected: number): void => assert.ok(Math.abs(actual - expected) < 1e-4, `${actual} != ${expected}`);

test('the Wilson interval matches the textbook values and stays inside [0, 1]', () => {
  const half = wilsonInterval(5, 10);
  close(half.low, 0.2366);
  close(half.high, 0.7634);
  const none = wilsonInterval(0, 4);
  assert.equal(none.low, 0);
  close(none.high, 0.4899);
  const all = wilsonInterval(4, 4);
  close(all.low, 0.5101);
  assert.equal(all.high, 1);
  assert.deepEqual(wilsonInterval(0, 0), { low: 0, high: 1 }, 'no episodes: nothing known');
  assert.throws(() => wilsonInterval(3, 2), /0 <= passes <= n/);
  assert.throws(() => wilsonInterval(1.5, 2), RangeError);
});

test('the mean interval needs two samples', () => {
  assert.equal(meanInterval(0.5, 0.1, 1), null);
  const interval = meanInterval(0.5, 0.2, 16)!;
  close(interval.low, 0.5 - 1.959964 * 0.05);
  close(interval.high, 0.5 + 1.959964 * 0.05);
});
