import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Kafka, logLevel } from 'kafkajs';
import { repoRoot } from '../../cli/paths.js';
import { AnalyticsCatalog } from '../../connectors/analytics/index.js';
import { LocalCheckpointStore } from '../../connectors/checkpoints/index.js';
import { createKafka, readTopic } from '../../connectors/kafka/index.js';
import { TopicSerde } from '../../connectors/registry/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { runLoop } from '../../pipelines/loop/index.js';
import { prepareTopics, type ProcessorContext } from '../../pipelines/runtime/index.js';
import { isRetriable, topicNames } from '../../schemas/index.js';
import { imageFor, kafkaClusterComponent } from '../../stack/index.js';
import { ensureStack, eventually, readAll, tempDir } from './harness.js';

// A three-broker KRaft cluster beside the shared single node (its own ports and state), so that killing one
// of its brokers disturbs nothing but this test.
const cluster = kafkaClusterComponent();
const pool = new DockerSandboxPool();
const log = (line: string): void => console.log(`# ${line}`);
before(async () => {
  await ensureStack();
  await cluster.ensure(log);
}, { timeout: 900_000 });
after(async () => {
  await pool.close();
  await cluster.stop(log);
});

// kafkajs only. The confluent client crashed this run with SIGSEGV (and stalled it) until issue 46 found one cause: a
// transaction's next native call started while its producer, given up on at the deadline, was being destroyed
// (docs/kafka.md, "A killed broker coming back (confluent)"); that is fixed and pinned by transaction-deadline.test.ts.
// With the fix this run passed 4 of 4 alone, then stalled twice on 7 December (the full test command and a rerun
// beside it): after the killed broker came back, no processor moved for 8 minutes, with no native call blocked
// (gdb: libuv's workers idle or polling ListConsumerGroupOffsets). Until that second cause is found the confluent case
// is not registered here: a stall costs the test command its 15-minute timeout. Later, with the send gate too, it
// ran 17 times alone without a stall, but one of them died with SIGSEGV after the broker's return (docs/kafka.md).
async function brokerKilledMidRun(client: 'confluent' | 'kafkajs'): Promise<void> {
  const names = topicNames(`it-fault-${randomUUID().slice(0, 8)}.`);
  const context: ProcessorContext = { kafka: createKafka({ clientId: 'it-fault', brokers: [...cluster.brokers], client }), serde: new TopicSerde(names), names };
  await prepareTopics(context);
  // Replica placement is not part of the Kafka port (no processor needs it): the test asks the brokers itself.
  const metadataAdmin = new Kafka({ brokers: [...cluster.brokers], clientId: 'it-fault-metadata', logLevel: logLevel.NOTHING }).admin();
  await metadataAdmin.connect();
  after(() => metadataAdmin.disconnect());
  const partitionsOf = async (topic: string) => (await metadataAdmin.fetchTopicMetadata({ topics: [topic] })).topics[0]!.partitions;
  assert.ok((await partitionsOf(names.name('trajectories'))).every((p) => p.replicas.length === 3), 'topics on the cluster keep three replicas');

  const dataDir = tempDir('fault');
  const groupSize = 2;
  const loop = runLoop(context, {
    taskFile: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'),
    dataDir,
    pool,
    imageFor,
    checkpoints: new LocalCheckpointStore(tempDir('fault-checkpoints')),
    limitTasks: 4,
    groupSize,
    batchSize: 2,
    maxTurns: 6,
    rolloutWorkers: 2,
    // A run takes 2-5 minutes here; a stalled one fails with its counts (progress) instead of the test's timeout.
    timeoutMs: 480_000,
  });
  // A loop that fails while the test waits fails the test at once with its own error, not as an unhandled rejection.
  let loopFailure: unknown;
  loop.catch((error: unknown) => void (loopFailure = error));

  // Mid-run: once the first trajectories are committed, the broker leading the trajectories topic's first
  // partition (so a write path is hit, not an idle follower) dies without a goodbye, and comes back later.
  let seen = 0;
  await eventually('the first trajectories', async () => {
    if (loopFailure !== undefined) throw loopFailure;
    seen = 0;
    // A loaded machine can time a read out (retriable): that is "not yet", not a failure.
    const read = await readTopic(context.kafka, { topic: names.name('trajectories'), onRecord: () => void seen++ }).then(() => true, (error: unknown) => {
      if (isRetriable(error)) return false;
      throw error;
    });
    return read && seen >= 2;
  }, 600_000, 1000);
  const leader = (await partitionsOf(names.name('trajectories')))[0]!.leader;
  const pid = cluster.nodePid(leader);
  assert.ok(pid !== undefined, `broker ${leader} runs`);
  process.kill(pid, 'SIGKILL');
  log(`killed broker ${leader} (pid ${pid}) after ${seen} trajectories`);
  await new Promise((resolve) => setTimeout(resolve, 10_000));
  assert.equal(await cluster.isUp(), false, 'the cluster is one broker short');
  await cluster.ensure(log);
  log(`broker ${leader} restarted`);

  const summary = await loop;
  const samples = 4 * groupSize;
  assert.equal(summary.trajectories, samples);

  const [trajectories, verifications, rewards, deadLetters] = await Promise.all([
    readAll(context, 'trajectories'),
    readAll(context, 'verifications'),
    readAll(context, 'rewards'),
    readAll(context, 'deadLetters'),
  ]);
  assert.deepEqual(deadLetters, []);
  const bySample = (records: ReadonlyArray<{ lineage: { taskId: string; attempt: number } }>): string[] => records.map((r) => `${r.lineage.taskId}#${r.lineage.attempt}`).sort();
  assert.equal(new Set(bySample(trajectories)).size, samples, 'one trajectory per sample');
  assert.equal(trajectories.length, samples, 'no trajectory duplicated');
  const ids = trajectories.map((t) => t.trajectoryId).sort();
  assert.deepEqual(verifications.map((v) => v.trajectoryId).sort(), ids, 'exactly one verification per trajectory');
  assert.deepEqual(rewards.map((r) => r.trajectoryId).sort(), ids, 'exactly one reward per trajectory');

  const catalog = await AnalyticsCatalog.open(dataDir);
  try {
    const count = async (sql: string): Promise<number> => Number((await catalog.query(sql)).rows[0]![0]);
    assert.equal(await count('SELECT count(DISTINCT trajectory_id) FROM trajectories'), samples);
    assert.equal(await count('SELECT count(*) FROM trajectories'), samples);
    assert.equal(await count('SELECT count(*) FROM verifications'), samples);
    assert.equal(await count('SELECT count(*) FROM rewards'), samples);
  } finally {
    catalog.close();
  }
}

test(
  'a broker SIGKILLed mid-run and restarted: every sample still ends with exactly one trajectory, verification and reward (kafkajs)',
  { timeout: 900_000 },
  () => brokerKilledMidRun('kafkajs'),
);
