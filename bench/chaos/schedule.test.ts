import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chaosSchedule, chaosTargets } from './schedule.js';

const options = { seed: '7', targets: chaosTargets(false), meanGapMs: 20_000, brokers: 3 };

test('a seed gives one schedule: every target once, gaps drawn in proportion to the mean, a broker of the cluster', () => {
  const schedule = chaosSchedule(options);
  assert.deepEqual(chaosSchedule(options), schedule, 'the same seed, the same kills');
  assert.deepEqual(schedule.map((k) => k.target).sort(), [...options.targets].sort());
  // Nothing is timed here: the gaps are numbers a pure function draws, each a fraction of the mean. The same seed
  // with twice the mean draws the same kills with their gaps in the same order, longest to shortest.
  const doubled = chaosSchedule({ ...options, meanGapMs: options.meanGapMs * 2 });
  const byGap = (kills: typeof schedule): string[] => [...kills].sort((a, b) => b.gapMs - a.gapMs).map((kill) => kill.target);
  assert.deepEqual(doubled.map((kill) => kill.target), schedule.map((kill) => kill.target));
  assert.deepEqual(byGap(doubled), byGap(schedule));
  assert.ok(schedule.every((kill) => kill.downMs > 0));
  // Over many seeds the gaps average out at the mean asked for.
  const gaps = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p'].flatMap((seed) => chaosSchedule({ ...options, seed }).map((k) => k.gapMs));
  const meanRatio = gaps.reduce((sum, gap) => sum + gap, 0) / gaps.length / options.meanGapMs;
  assert.ok(Math.abs(meanRatio - 1) < 0.15, `mean gap / asked mean = ${meanRatio}`);
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
