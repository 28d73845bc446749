import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { repoRoot } from '../../cli/paths.js';
import { BlobTreeStore, storeLargeTrees } from '../../connectors/artifacts/index.js';
import { BlobCheckpointStore } from '../../connectors/checkpoints/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { S3BlobStore, sha256Hex, type S3StoreOptions } from '../../connectors/storage/index.js';
import { PROGRAM_REPAIR_ENV } from '../../envs/index.js';
import { prepareTasks } from '../../pipelines/jobs/task-job/index.js';
import { createLearner } from '../../pipelines/learner/index.js';
import { createRolloutWorker, PolicyTracker, type PolicySource } from '../../pipelines/rollout-worker/index.js';
import type { Policy } from '../../policies/index.js';
import { FEATURE_NAMES, onnxRepairKind } from '../../policies/index.js';
import { NO_WORKSPACE_EXTRAS, nowIso, STACK_S3_ACCESS_KEY_ID, STACK_S3_SECRET_ACCESS_KEY, type Reward, type Task, type Trajectory } from '../../schemas/index.js';
import { imageFor, s3Component, stackPaths } from '../../stack/index.js';
import { committedPastEnd, ensureStack, eventually, freshContext, readAll, sendRaw, tempDir } from './harness.js';

/**
 * Issue 42's S3 faults, on an S3 server of this test's own (its own name, ports and folder), so stopping it leaves
 * the stack's server, which other tests and people use, alone. S3 unreachable: the record's transaction is not
 * committed, nothing is dead-lettered, and the processor resumes once S3 answers (the learner publishing checkpoints,
 * a rollout worker resolving claim-checked task trees). A missing object or a digest mismatch: not retried, the
 * record dead-lettered with a reason that names the object.
 */
const URL = 'http://127.0.0.1:8435';
const server = s3Component({ name: 's3-outage-it', url: URL, external: false, ports: { master: 9535, volume: 9542, filer: 8990 } });
const log = (line: string): void => console.log(`# ${line}`);
const s3: S3StoreOptions = { endpoint: URL, accessKeyId: STACK_S3_ACCESS_KEY_ID, secretAccessKey: STACK_S3_SECRET_ACCESS_KEY, retry: { retries: 2, initialDelayMs: 100, maxDelayMs: 500 }, requestTimeoutMs: 3_000 };
const pool = new DockerSandboxPool({ maxSandboxes: 2 });

before(async () => {
  await ensureStack();
  await server.ensure(log);
}, { timeout: 900_000 });
after(async () => {
  await pool.close();
  await server.stop(log);
  rmSync(join(stackPaths().stateDir, 's3-outage-it'), { recursive: true, force: true });
});

const lineage = (i: number) => ({ taskId: `task-${i % 5}`, attempt: i % 4, runId: 's3-outage', policyVersion: 0, sandboxImageDigest: null, verifierVersion: null, createdAt: nowIso() });

function samplePair(i: number): { trajectory: Trajectory; reward: Reward } {
  const features = [0, 1, 2].map((c) => FEATURE_NAMES.map((_, f) => ((i + c * 7 + f * 3) % 5) / 5));
  const trajectory: Trajectory = {
    trajectoryId: `t-${i}`, groupId: `g-${Math.floor(i / 4)}`, groupSize: 4, envId: 'program-repair/v1', policyId: 'linear-repair',
    steps: [{ index: 0, observation: 'o', toolCall: { name: 'apply_edit', arguments: { id: i % 3 } }, toolResult: { ok: true, output: '', truncated: false, exitCode: 0 }, decision: { features, chosen: i % 3, logprob: Math.log(1 / 3) }, llm: null, startedAt: nowIso(), durationMs: 1, sandboxMs: 1 }],
    finalFiles: {}, finalExtras: NO_WORKSPACE_EXTRAS, outcome: 'submitted', error: null, totalMs: 1, sandboxMs: 1, lineage: lineage(i),
  };
  const reward: Reward = {
    rewardId: `r-${i}`, trajectoryId: `t-${i}`, verificationId: `v-${i}`, groupId: trajectory.groupId, reward: i % 2, advantage: i % 2 ? 1 : -1,
    groupMean: 0.5, groupStd: 0.5, groupSize: 4, lineage: lineage(i),
  };
  return { trajectory, reward };
}

async function sendSamples(context: Awaited<ReturnType<typeof freshContext>>, pairs: ReadonlyArray<ReturnType<typeof samplePair>>): Promise<void> {
  await sendRaw(context, 'trajectories', await Promise.all(pairs.map(async (p) => ({ key: p.trajectory.lineage.taskId, value: await context.serde.encode('trajectories', p.trajectory) }))));
  await sendRaw(context, 'rewards', await Promise.all(pairs.map(async (p) => ({ key: p.reward.trajectoryId, value: await context.serde.encode('rewards', p.reward) }))));
}

async function committedOffsets(context: Awaited<ReturnType<typeof freshContext>>, groupId: string, topics: readonly string[]): Promise<string[]> {
  const admin = context.kafka.admin();
  await admin.connect();
  const committed = await admin.fetchGroupOffsets(groupId, topics.map((key) => context.names.name(key as 'rewards'))).finally(() => admin.disconnect());
  return committed.flatMap((t) => t.partitions.map((p) => `${t.topic}:${p.partition}:${p.offset}`)).sort();
}

test('S3 stopped under the learner: no checkpoint, no commit, no dead letter; every version once after S3 answers again', { timeout: 420_000 }, async () => {
  const context = await freshContext('s3-outage-learner');
  const blobs = new S3BlobStore(`s3://trialrun/learner-${Date.now().toString(36)}`, s3);
  const learner = createLearner(context, { runId: 's3-outage', store: new BlobCheckpointStore(blobs), batchSize: 4 });
  const pairs = Array.from({ length: 16 }, (_, i) => samplePair(i));
  await learner.start();
  try {
    await sendSamples(context, pairs.slice(0, 8));
    await eventually('two checkpoints while S3 answers', async () => (await readAll(context, 'policyCheckpoints')).length === 2, 120_000);
    const groupId = `${context.names.prefix}learner`;
    await eventually('the first half committed', async () => (await committedPastEnd(context, groupId, 'trajectories')) && committedPastEnd(context, groupId, 'rewards'), 60_000);
    assert.equal(await server.stop(log), 'stopped');
    await sendSamples(context, pairs.slice(8));
    // Long enough for the learner to try, fail, find S3 not answering and leave its group (probes every 1-5 s).
    await new Promise((resolve) => setTimeout(resolve, 15_000));
    assert.equal((await readAll(context, 'policyCheckpoints')).length, 2, 'no checkpoint while S3 is stopped');
    // Trajectories alone, and rewards that complete no batch, only fill the join buffer and may commit while S3 is
    // down (how many depends on how the consumer's fetches split the partitions); the reward that completes a batch
    // needs the checkpoint's artifact on S3, so it, and every reward after it on its partition, stays uncommitted.
    assert.equal(await committedPastEnd(context, groupId, 'rewards'), false, 'the reward that completes a batch is not committed while S3 is stopped');
    assert.equal(learner.metrics.deadLettered, 0);
    assert.equal(await server.ensure(log), 'started');
    await eventually('four checkpoints once S3 answers', async () => (await readAll(context, 'policyCheckpoints')).length >= 4, 240_000);
    await eventually('every input committed', async () => (await committedPastEnd(context, groupId, 'trajectories')) && committedPastEnd(context, groupId, 'rewards'), 120_000);
    const published = await readAll(context, 'policyCheckpoints');
    assert.deepEqual(published.map((c) => c.version), [1, 2, 3, 4], 'one checkpoint per batch, none repeated');
    assert.equal(published.reduce((sum, c) => sum + c.metrics.samples + c.metrics.staleDropped, 0), 16, 'every sample counted once');
    const store = new BlobCheckpointStore(blobs);
    for (const c of published) assert.equal((await store.get(c.artifact!)).length, c.artifact!.bytes);
    assert.deepEqual(await readAll(context, 'deadLetters'), [], 'nothing dead-lettered');
  } finally {
    await learner.stop();
    blobs.close();
    await server.ensure(log);
  }
});

/** Submits at once: one sandbox start and one tool call per episode. */
const submitter: Policy<unknown> = { policyId: 'scripted-submit', version: 0, act: async () => ({ action: { name: 'submit', arguments: {} }, decision: null }) };

test('a rollout worker with claim-checked trees on S3: waits out a stopped S3 uncommitted; a missing or changed blob is a dead letter naming it', { timeout: 600_000 }, async () => {
  const context = await freshContext('s3-outage-worker');
  const blobs = new S3BlobStore(`s3://trialrun/trees-${Date.now().toString(36)}`, s3);
  const trees = new BlobTreeStore(blobs);
  const [good, gone, changed, late] = (await prepareTasks({ file: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'), rejectsDir: tempDir('s3-outage-rejects') })).tasks;
  // Threshold 0: every tree of each task goes to the store; the record carries only digests.
  const tasks = { good: await storeLargeTrees(good!, trees, 0), gone: await storeLargeTrees(gone!, trees, 0), changed: await storeLargeTrees(changed!, trees, 0), late: await storeLargeTrees(late!, trees, 0) };
  // The blob of each task's buggy module (distinct per task): one deleted, one overwritten with other bytes.
  const moduleBlob = (task: Task): string => {
    const digest = sha256Hex(Object.values(task.files)[0]!);
    return `blobs/${digest.slice(0, 2)}/${digest}`;
  };
  await blobs.delete(moduleBlob(gone!));
  await blobs.put(moduleBlob(changed!), Buffer.from('not what the digest says'));
  const source: PolicySource = { kind: { policyId: submitter.policyId, serves: [PROGRAM_REPAIR_ENV] }, current: () => submitter };
  const worker = createRolloutWorker(context, { runId: 's3-outage', pool, imageFor, policies: source, envIds: [PROGRAM_REPAIR_ENV], trees, groupSize: 1, maxTurns: 2, concurrency: 1 });
  const send = async (list: readonly Task[]): Promise<void> => sendRaw(context, 'tasks', await Promise.all(list.map(async (task) => ({ key: task.taskId, value: await context.serde.encode('tasks', task) }))));
  await worker.start();
  try {
    await send([tasks.good, tasks.gone, tasks.changed]);
    const groupId = `${context.names.prefix}rollout-worker`;
    await eventually('the three tasks handled', async () => committedPastEnd(context, groupId, 'tasks'), 240_000);
    const letters = await readAll(context, 'deadLetters');
    assert.equal(letters.length, 2, JSON.stringify(letters.map((l) => l.error)));
    const reasons = letters.map((letter) => `${letter.error.name}: ${letter.error.message}`).sort();
    assert.match(reasons[0]!, new RegExp(`^ArtifactIntegrityError: s3://trialrun/trees-\\w+/${moduleBlob(changed!)} fails its sha256 check`));
    assert.match(reasons[1]!, new RegExp(`^BlobNotFoundError: .*s3://trialrun/trees-\\w+/${moduleBlob(gone!)}`));
    assert.ok(letters.every((letter) => letter.error.retriable === false && letter.attempts === 1), 'neither is retried');
    assert.deepEqual((await readAll(context, 'trajectories')).map((t) => t.lineage.taskId), [good!.taskId]);

    const before = await committedOffsets(context, groupId, ['tasks']);
    assert.equal(await server.stop(log), 'stopped');
    await send([tasks.late]);
    await new Promise((resolve) => setTimeout(resolve, 15_000));
    assert.deepEqual(await committedOffsets(context, groupId, ['tasks']), before, 'the task is not committed while S3 is stopped');
    assert.equal((await readAll(context, 'deadLetters')).length, 2, 'nothing more dead-lettered');
    assert.equal(await server.ensure(log), 'started');
    await eventually('the late task rolled out once S3 answers', async () => committedPastEnd(context, groupId, 'tasks'), 300_000);
    assert.deepEqual((await readAll(context, 'trajectories')).map((t) => t.lineage.taskId).sort(), [good!.taskId, late!.taskId].sort(), 'each task rolled out once');
    assert.equal((await readAll(context, 'deadLetters')).length, 2);
  } finally {
    await worker.stop();
    blobs.close();
    await server.ensure(log);
  }
});

test('a rollout worker\'s policy tracker waits out a stopped S3 and then serves the checkpoint published meanwhile', { timeout: 300_000 }, async () => {
  const context = await freshContext('s3-outage-tracker');
  const blobs = new S3BlobStore(`s3://trialrun/tracker-${Date.now().toString(36)}`, s3);
  const store = new BlobCheckpointStore(blobs);
  const served: number[] = [];
  const tracker = await PolicyTracker.follow(context.kafka, context.serde, context.names, { store, policyId: onnxRepairKind.policyId, storeRetry: { retries: 300, initialDelayMs: 200, maxDelayMs: 1_000 }, onChange: (version) => served.push(version) });
  const bytes = onnxRepairKind.encodeParams(onnxRepairKind.initial().params);
  const publish = async (version: number, artifact: Awaited<ReturnType<typeof store.put>>): Promise<void> => {
    const value = await context.serde.encode('policyCheckpoints', {
      policyId: onnxRepairKind.policyId, version, parentVersion: version - 1, featureNames: [...onnxRepairKind.featureNames], weights: [], sha256: artifact.sha256, artifact,
      metrics: { samples: 0, meanReward: 0, meanAbsAdvantage: 0, gradNorm: 0, staleDropped: 0, extra: {} },
      lineage: { taskId: 'all', attempt: 0, runId: 's3-outage', policyVersion: version, sandboxImageDigest: null, verifierVersion: null, createdAt: nowIso() },
    });
    await sendRaw(context, 'policyCheckpoints', [{ key: onnxRepairKind.policyId, value }]);
  };
  try {
    await publish(1, await store.put(onnxRepairKind.policyId, 1, bytes));
    await eventually('version 1 served', async () => tracker.current().version === 1, 60_000);
    const second = await store.put(onnxRepairKind.policyId, 2, bytes);
    assert.equal(await server.stop(log), 'stopped');
    await publish(2, second);
    await new Promise((resolve) => setTimeout(resolve, 8_000));
    assert.equal(tracker.current().version, 1, 'still the last version it could load');
    assert.equal(await server.ensure(log), 'started');
    await eventually('version 2 served once S3 answers', async () => tracker.current().version === 2, 120_000);
    assert.deepEqual(served, [1, 2], 'no version skipped');
  } finally {
    await tracker.close();
    blobs.close();
    await server.ensure(log);
  }
});
