import assert from 'node:assert/strict';
import { test } from 'node:test';
import { groupAdvantages } from './advantages.js';

test('advantages are centred and scaled by the group std', () => {
  const { mean, std, advantages } = groupAdvantages([1, 0, 0, 1]);
  assert.equal(mean, 0.5);
  assert.equal(std, 0.5);
  advantages.forEach((a, i) => assert.ok(Math.abs(a - (i % 3 === 0 ? 1 : -1)) < 1e-5));
});

test('a group with equal rewards carries no signal', () => {
  assert.deepEqual(groupAdvantages([1, 1, 1]).advantages, [0, 0, 0]);
  assert.deepEqual(groupAdvantages([0, 0]).advantages, [0, 0]);
});

test('an empty group is an error', () => {
  assert.throws(() => groupAdvantages([]), /at least one/);
});
