import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { openCheckpointStore } from '../../connectors/checkpoints/index.js';
import { readRange, readTopic, type RangeRecord } from '../../connectors/kafka/index.js';
import { TopicSerde } from '../../connectors/registry/index.js';
import { createLearner } from '../../pipelines/learner/index.js';
import { REPLAY_SOURCE_HEADER, replayIntoProcessor, replayIntoTopic } from '../../pipelines/jobs/replay/index.js';
import type { ProcessorContext } from '../../pipelines/runtime/index.js';
import { policyKind } from '../../policies/index.js';
import { topicNames, type TopicKey } from '../../schemas/index.js';
import { syntheticReward, syntheticTrajectory } from './analytics-fixtures.js';
import { ensureStack, freshContext, readAll, sendRaw, tempDir } from './harness.js';

before(ensureStack, { timeout: 900_000 });

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function rawRecords(context: ProcessorContext, topic: string): Promise<Array<Omit<RangeRecord, 'headers' | 'timestamp'>>> {
  const records: Array<Omit<RangeRecord, 'headers' | 'timestamp'>> = [];
  await readTopic(context.kafka, { topic, onRecord: (record) => void records.push(record) });
  return records;
}

/** Trajectories and their rewards, as the rollout workers and the reward processor would have written them. */
async function publishSamples(context: ProcessorContext, from: number, to: number): Promise<void> {
  const features = policyKind('linear-repair').featureNames.length;
  const trajectories = [];
  const rewards = [];
  for (let i = from; i < to; i++) {
    const trajectory = syntheticTrajectory(i, { runId: 'live', steps: 4, features });
    trajectories.push({ key: trajectory.lineage.taskId, value: await context.serde.encode('trajectories', trajectory) });
    rewards.push({ key: trajectory.trajectoryId, value: await context.serde.encode('rewards', syntheticReward(i, { runId: 'live' })) });
  }
  await sendRaw(context, 'trajectories', trajectories);
  await sendRaw(context, 'rewards', rewards);
}

test('a topic replay copies a time range keyed, partitioned and timestamped as the source, once, without touching live groups', { timeout: 120_000 }, async () => {
  const context = await freshContext('replay-topic');
  const source = context.names.name('rewards');
  const target = `${context.names.prefix}rewards-backfill`;
  const encode = (i: number) => context.serde.encode('rewards', syntheticReward(i, { runId: 'r' }));
  await sendRaw(context, 'rewards', await Promise.all(Array.from({ length: 30 }, async (_, i) => ({ key: `early-${i}`, value: await encode(i) }))));
  await pause(50);
  const boundary = Date.now();
  await pause(50);
  await sendRaw(context, 'rewards', await Promise.all(Array.from({ length: 20 }, async (_, i) => ({ key: `late-${i}`, value: await encode(100 + i) }))));

  // A live group somewhere in the topic: the replay must leave it exactly there.
  const admin = context.kafka.admin();
  await admin.connect();
  const liveGroup = `${context.names.prefix}reward`;
  await admin.setGroupOffsets(liveGroup, [0, 1, 2].map((partition) => ({ topic: source, partition, offset: '1' })));
  const liveBefore = await admin.fetchGroupOffsets(liveGroup, [source]);

  const progress: number[] = [];
  const first = await replayIntoTopic(context.kafka, { source, target, from: { timestamp: boundary }, onProgress: (done) => void progress.push(done) });
  assert.equal(first.copied, 20);
  assert.ok(progress.length > 0 && progress[progress.length - 1] === 20, 'progress is reported');

  const copies = await rawRecords(context, target);
  const originals = (await rawRecords(context, source)).filter((r) => r.key!.startsWith('late-'));
  const byKey = new Map(originals.map((r) => [r.key, r]));
  assert.equal(copies.length, 20);
  for (const copy of copies) {
    const original = byKey.get(copy.key)!;
    assert.ok(original, `copy ${copy.key} has an original`);
    assert.equal(copy.partition, original.partition, 'same partition as the source');
    assert.ok(copy.value!.equals(original.value!), 'same bytes');
  }
  // Headers and timestamps travel too.
  const seen: RangeRecord[] = [];
  await readRange(context.kafka, { topic: target, from: 'earliest', groupId: `it-check-${boundary}`, onRecord: (r) => void seen.push(r) });
  for (const copy of seen) {
    const original = byKey.get(copy.key)!;
    assert.equal(copy.headers[REPLAY_SOURCE_HEADER], `${source}/${original.partition}/${original.offset}`);
    assert.ok(Number(copy.timestamp) >= boundary, 'the source timestamp is kept');
  }

  const again = await replayIntoTopic(context.kafka, { source, target, from: { timestamp: boundary } });
  assert.equal(again.copied, 0, 'the same replay copies nothing twice');
  assert.equal(again.groupId, first.groupId);
  assert.equal((await rawRecords(context, target)).length, 20);

  assert.deepEqual(await admin.fetchGroupOffsets(liveGroup, [source]), liveBefore, 'the live group did not move');
  await admin.disconnect();
});

test('a learner replayed over a time range retrains from stored rewards in its own namespace, idempotently', { timeout: 240_000 }, async () => {
  const context = await freshContext('replay-learner');
  await publishSamples(context, 0, 12);
  await pause(50);
  const boundary = Date.now();
  await pause(50);
  await publishSamples(context, 100, 116);

  const checkpoints = tempDir('replay-checkpoints');
  const stages = new Set<string>();
  const replay = () =>
    replayIntoProcessor(context, {
      processor: 'learner',
      inputs: ['trajectories', 'rewards'],
      from: { timestamp: boundary },
      create: (replayContext) => createLearner(replayContext, { runId: 'replay-it', batchSize: 8, store: openCheckpointStore(checkpoints) }),
      onProgress: (p) => void stages.add(p.stage),
      pollMs: 200,
    });
  const first = await replay();
  assert.deepEqual(first.copies.map((c) => c.copied), [16, 16]);
  assert.ok(first.processed >= 32);
  assert.deepEqual([...stages].sort(), ['copy', 'process']);

  const names = topicNames(first.prefix);
  const replayContext = { kafka: context.kafka, serde: new TopicSerde(names), names };
  const retrained = await readAll(replayContext, 'policyCheckpoints');
  assert.deepEqual(retrained.map((c) => c.version), [1, 2], '16 samples in the range at 8 per update: two checkpoints');
  assert.ok(retrained.every((c) => c.lineage.runId === 'replay-it' && c.metrics.samples === 8));
  assert.deepEqual(await readAll(context, 'policyCheckpoints'), [], 'nothing was published to the live policy');

  const again = await replay();
  assert.equal(again.prefix, first.prefix);
  assert.deepEqual(again.copies.map((c) => c.copied), [0, 0]);
  assert.equal(again.processed, 0);
  assert.deepEqual((await readAll(replayContext, 'policyCheckpoints')).map((c) => c.version), [1, 2], 'a second run trains nothing twice');

  const liveGroups = ['learner', 'reward'].map((name) => `${context.names.prefix}${name}`);
  const admin = context.kafka.admin();
  await admin.connect();
  try {
    for (const groupId of liveGroups) {
      const offsets = await admin.fetchGroupOffsets(groupId, (['trajectories', 'rewards'] as TopicKey[]).map((k) => context.names.name(k)));
      assert.ok(offsets.every((t) => t.partitions.every((p) => p.offset === '-1')), `${groupId} was never used`);
    }
  } finally {
    await admin.disconnect();
  }
});
