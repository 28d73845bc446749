import assert from 'node:assert/strict';
import { test } from 'node:test';
import { meanInterval } from './stats.js';

const close = (actual: number, expected: number): void => assert.ok(Math.abs(actual - expected) < 1e-4, `${actual} != ${expected}`);

test('the mean interval needs two samples', () => {
  assert.equal(meanInterval(0.5, 0.1, 1), null);
  const interval = meanInterval(0.5, 0.2, 16)!;
  close(interval.low, 0.5 - 1.959964 * 0.05);
  close(interval.high, 0.5 + 1.959964 * 0.05);
});
