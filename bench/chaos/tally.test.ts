import assert from 'node:assert/strict';
import { test } from 'node:test';
import { tallyChaos, type ChaosRecords } from './tally.js';

const published = { taskIds: ['a', 'b'], groupSize: 2, batchSize: 2 };
const trajectories = [
  { taskId: 'a', attempt: 0, trajectoryId: 'ta0' },
  { taskId: 'a', attempt: 1, trajectoryId: 'ta1' },
  { taskId: 'b', attempt: 0, trajectoryId: 'tb0' },
  { taskId: 'b', attempt: 1, trajectoryId: 'tb1' },
];
const exact: ChaosRecords = {
  trajectories,
  verifications: trajectories.map(({ trajectoryId }) => ({ trajectoryId })),
  rewards: trajectories.map(({ trajectoryId }) => ({ trajectoryId, learn: true })),
  checkpoints: [{ version: 1, parentVersion: 0 }, { version: 2, parentVersion: 1 }],
  deadLetters: [{ stage: 'decode' }, { stage: 'validate' }],
};

test('every sample once, every verdict once, one chain, only poison dead-lettered: exact', () => {
  const tally = tallyChaos(published, exact);
  assert.equal(tally.exact, true);
  assert.deepEqual(tally.trajectories, { expected: 4, records: 4, lost: 0, duplicated: 0, unexpected: 0 });
  assert.deepEqual(tally.deadLetters, { poison: 2, other: 0 });
  assert.equal(tally.checkpoints.newest, 2);
});

test('a sample rolled out twice (under a new trajectory id) is a duplicate; its extra verdicts are unexpected', () => {
  const again = { taskId: 'a', attempt: 1, trajectoryId: 'ta1-again' };
  const tally = tallyChaos(published, { ...exact, trajectories: [...trajectories, again] });
  assert.equal(tally.trajectories.duplicated, 1);
  assert.equal(tally.verifications.lost, 1, 'the second trajectory has no verification');
  assert.equal(tally.exact, false);
});

test('a lost reward, a reward twice, a gap in the chain and a dead letter that is not poison are each counted', () => {
  const tally = tallyChaos(published, {
    ...exact,
    rewards: [{ trajectoryId: 'ta0', learn: true }, { trajectoryId: 'ta0', learn: true }, { trajectoryId: 'tb0', learn: true }, { trajectoryId: 'tb1', learn: true }],
    checkpoints: [{ version: 1, parentVersion: 0 }, { version: 3, parentVersion: 2 }],
    deadLetters: [{ stage: 'handle' }],
  });
  assert.deepEqual([tally.rewards.lost, tally.rewards.duplicated], [1, 1]);
  assert.equal(tally.checkpoints.brokenLinks, 1, 'version 2 is missing');
  assert.deepEqual(tally.deadLetters, { poison: 0, other: 1 });
  assert.equal(tally.exact, false);
});

test('a checkpoint from the wrong parent breaks the chain; a version twice is a duplicate', () => {
  const tally = tallyChaos(published, { ...exact, checkpoints: [{ version: 1, parentVersion: 0 }, { version: 2, parentVersion: 0 }, { version: 2, parentVersion: 1 }] });
  assert.equal(tally.checkpoints.brokenLinks, 1);
  assert.equal(tally.checkpoints.duplicated, 1);
});

test('one checkpoint per full batch of learnable rewards: one missing is not exact', () => {
  const noSignal = { ...exact, rewards: exact.rewards.map((r, i) => ({ ...r, learn: i < 2 })) };
  const tally = tallyChaos(published, noSignal);
  assert.equal(tally.checkpoints.expected, 1, '2 learnable rewards, batches of 2');
  assert.equal(tally.exact, false, 'two checkpoints where one batch was learnable');
  assert.equal(tallyChaos(published, { ...noSignal, checkpoints: [{ version: 1, parentVersion: null }] }).exact, true, 'a first version has no parent');
});
