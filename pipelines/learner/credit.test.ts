import assert from 'node:assert/strict';
import test from 'node:test';
import { groupAdvantages } from '../reward/index.js';
import { failureAdvantage } from './credit.js';

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
