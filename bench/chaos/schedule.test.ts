import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chaosSchedule, chaosTargets } from './schedule.js';

const options = { seed: '7', targets: chaosTargets(false), meanGapMs: 20_000, brokers: 3 };

test('a seed gives one schedule: every target once, gaps around the mean, a broker of the cluster', () => {
  const schedule = chaosSchedule(options);
  assert.deepEqual(chaosSchedule(options), schedule, 'the same seed, the same kills');
  assert.deepEqual(schedule.map((k) => k.target).sort(), [...options.targets].sort());
  for (const kill of schedule) {
    assert.ok(kill.gapMs >= 10_000 && kill.gapMs <= 30_000, `${kill.target}: gap ${kill.gapMs}`);
    assert.ok(kill.downMs > 0);
  }
  const broker = schedule.find((k) => k.target === 'broker')!;
  assert.ok(broker.brokerNode! >= 1 && broker.brokerNode! <= 3);
  assert.ok(schedule.every((k) => k.target === 'broker' || k.brokerNode === undefined));
});

test('another seed orders the kills differently', () => {
  const orders = new Set(['1', '2', '3', '4'].map((seed) => chaosSchedule({ ...options, seed }).map((k) => k.target).join()));
  assert.ok(orders.size > 1);
});

test('the model server is a target only with a model server', () => {
  assert.ok(!chaosTargets(false).includes('model-server'));
  assert.ok(chaosTargets(true).includes('model-server'));
  assert.throws(() => chaosSchedule({ ...options, targets: ['broker', 'broker'] }), /twice/);
});
