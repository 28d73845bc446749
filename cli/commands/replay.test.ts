import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, topicNames } from '../../schemas/index.js';
import { resolveReplaySettings, targetTopic } from './replay.js';

const names = topicNames('exp1.');
const now = Date.parse('2026-01-01T00:00:00Z');

test('--into a topic stays under the topic prefix, and a live catalog topic is refused', () => {
  assert.equal(targetTopic(names, 'rewards-backfill'), 'exp1.rewards-backfill');
  assert.equal(targetTopic(names, 'exp1.rewards-backfill'), 'exp1.rewards-backfill', 'already under the prefix');
  assert.equal(targetTopic(names, 'trialrun.rewards-backfill'), 'exp1.trialrun.rewards-backfill', "another experiment's prefix is only a name here");
  for (const live of ['rewards', 'exp1.rewards', 'policyCheckpoints', 'policy-checkpoints']) {
    assert.throws(() => targetTopic(names, live), (error: unknown) => error instanceof ConfigError && /is the live topic exp1\./.test(error.message));
  }
  assert.throws(() => targetTopic(names, 'bad name!'), /is not a valid topic name/);
});

test('replay settings are checked before anything connects: required options, ranges, topics per target', () => {
  const settings = resolveReplaySettings({ topic: ['rewards'], from: '2025-06-01T00:00:00Z', to: 'latest', into: 'backfill' }, names, now);
  assert.deepEqual(settings.from, { timestamp: Date.parse('2025-06-01T00:00:00Z') });
  assert.equal(settings.to, 'latest');
  const refuse = (values: Record<string, string | string[]>, message: RegExp): void => assert.throws(() => resolveReplaySettings({ to: 'latest', ...values }, names, now), message);
  refuse({ topic: ['rewards'], into: 'x' }, /--from and --into are required/);
  refuse({ topic: ['rewards'], from: '5', to: '2', into: 'x' }, /--from offset 5 is after --to offset 2/);
  refuse({ topic: ['rewards'], from: '-5', into: 'x' }, /--from: "-5" is negative/);
  refuse({ topic: ['rewards'], from: '2027-01-01', into: 'x' }, /--from 2027-01-01T00:00:00.000Z is in the future/);
  refuse({ topic: ['rewards'], from: 'earliest', to: 'soon', into: 'x' }, /--to: "soon" is not a position/);
  refuse({ from: 'earliest', into: 'x' }, /give exactly one --topic \(got 0\)/);
  refuse({ topic: ['rewards'], from: 'earliest', into: 'rewards' }, /is the live topic exp1.rewards/);
  refuse({ topic: ['tasks'], from: 'earliest', into: 'learner' }, /learner reads trajectories and rewards; it cannot replay tasks/);
  refuse({ from: 'earliest', into: 'learner', 'batch-size': '0' }, /--batch-size must be a whole number >= 1/);
  // Names of Object's own properties are topic names like any other, not processors.
  assert.equal(resolveReplaySettings({ topic: ['rewards'], from: 'earliest', to: 'latest', into: 'constructor' }, names, now).into, 'constructor');
  assert.equal(targetTopic(names, 'constructor'), 'exp1.constructor');
});
