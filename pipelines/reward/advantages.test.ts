import assert from 'node:assert/strict';
import { test } from 'node:test';
import { failureAdvantage, groupAdvantages } from './advantages.js';

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

test('a failure’s advantage is recovered from any member of its group', () => {
  for (const rewards of [
    [1, 0, 0, 0],
    [1, 1, 0, 1, 0, 0, 0, 0],
    [0, 1, 1, 1],
  ]) {
    const { mean, advantages } = groupAdvantages(rewards);
    const failed = advantages[rewards.indexOf(0)]!;
    rewards.forEach((reward, i) => {
      const recovered = failureAdvantage({ reward, advantage: advantages[i]!, groupMean: mean });
      assert.ok(Math.abs(recovered - failed) < 1e-9, `${rewards.join('')} member ${i}: ${recovered} != ${failed}`);
      assert.ok(recovered < 0);
    });
  }
});

test('a reward at its group mean carries no signal', () => {
  assert.equal(failureAdvantage({ reward: 0.5, advantage: 0, groupMean: 0.5 }), 0);
});
