import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { LocalCheckpointStore, openCheckpointStore, type CheckpointStore } from '../../connectors/checkpoints/index.js';
import { ensureS3Bucket } from '../../connectors/storage/index.js';
import { FEATURE_NAMES } from '../../policies/index.js';
import { createLearner } from '../../pipelines/learner/index.js';
import { PolicyTracker } from '../../pipelines/rollout-worker/index.js';
import { NO_WORKSPACE_EXTRAS, nowIso, type Reward, type Trajectory } from '../../schemas/index.js';
import { childExit, s3Component, stackUp, stopChild } from '../../stack/index.js';
import { repoRoot } from '../../cli/paths.js';
import { committedPastEnd, ensureStack, eventually, freshContext, readAll, sendRaw, tempDir } from './harness.js';

before(ensureStack, { timeout: 900_000 });

const lineage = (i: number, policyVersion: number) => ({ taskId: `task-${i % 5}`, attempt: i % 4, runId: 'learner-it', policyVersion, sandboxImageDigest: null, verifierVersion: null, createdAt: nowIso() });

/** Sample i, rolled out under `policyVersion` (by default the version a learner with batches of 4 is at when it arrives). */
function samplePair(i: number, policyVersion = Math.floor(i / 4)): { trajectory: Trajectory; reward: Reward } {
  const features = [0, 1, 2].map((c) => FEATURE_NAMES.map((_, f) => ((i + c * 7 + f * 3) % 5) / 5));
  const trajectory: Trajectory = {
    trajectoryId: `t-${i}`, groupId: `g-${Math.floor(i / 4)}`, groupSize: 4, envId: 'program-repair/v1', policyId: 'linear-repair',
    steps: [{ index: 0, observation: 'o', toolCall: { name: 'apply_edit', arguments: { id: i % 3 } }, toolResult: { ok: true, output: '', truncated: false, exitCode: 0 }, decision: { features, chosen: i % 3, logprob: Math.log(1 / 3) }, llm: null, startedAt: nowIso(), durationMs: 1, sandboxMs: 1 }],
    finalFiles: {}, finalExtras: NO_WORKSPACE_EXTRAS, outcome: 'submitted', error: null, totalMs: 1, sandboxMs: 1, lineage: lineage(i, policyVersion),
  };
  const reward: Reward = {
    rewardId: `r-${i}`, trajectoryId: `t-${i}`, verificationId: `v-${i}`, groupId: trajectory.groupId, reward: i % 2, advantage: i % 2 ? 1 : -1,
    groupMean: 0.5, groupStd: 0.5, groupSize: 4, lineage: lineage(i, policyVersion),
  };
  return { trajectory, reward };
}

/**
 * The learner as its own process. A SIGKILLed instance stays in the group until its session times out, and
 * the next one waits that long for the partitions (longer when several died mid-join): 10 s, not 45.
 */
function startLearner(prefix: string, checkpoints: string): ChildProcess {
  const child = spawn(process.execPath, [join(repoRoot(), 'bin', 'trialrun.js'), 'run', 'learner', '--batch-size', '4', '--session-timeout-ms', '10000'], {
    env: { ...process.env, TRIALRUN_TOPIC_PREFIX: prefix, TRIALRUN_CHECKPOINTS: checkpoints },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  // What a learner says on its way (errors, rebalances) is what explains a slow or failed run.
  child.stderr!.on('data', (chunk: Buffer) => process.stderr.write(`# learner ${child.pid}: ${chunk.toString()}`));
  return child;
}


test('a learner killed at random moments resumes without losing or double-counting a sample', { timeout: 300_000 }, async () => {
  const context = await freshContext('learner');
  const checkpoints = tempDir('learner-ckpt');
  const pairs = Array.from({ length: 40 }, (_, i) => samplePair(i));
  let learner = startLearner(context.names.prefix, checkpoints);
  for (let burst = 0; burst < 5; burst++) {
    const slice = pairs.slice(burst * 8, burst * 8 + 8);
    await sendRaw(context, 'trajectories', await Promise.all(slice.map(async (p) => ({ key: p.trajectory.lineage.taskId, value: await context.serde.encode('trajectories', p.trajectory) }))));
    await sendRaw(context, 'rewards', await Promise.all(slice.map(async (p) => ({ key: p.reward.trajectoryId, value: await context.serde.encode('rewards', p.reward) }))));
    // Kill somewhere between "nothing processed yet" and "mid-batch".
    await new Promise((resolve) => setTimeout(resolve, 500 + Math.random() * 2500));
    learner.kill('SIGKILL');
    await childExit(learner);
    learner = startLearner(context.names.prefix, checkpoints);
  }
  try {
    await eventually('ten checkpoints', async () => (await readAll(context, 'policyCheckpoints')).length >= 10, 180_000);
    // Past every input, no further (or repeated) checkpoint can appear: each commits with its inputs' offsets.
    const groupId = `${context.names.prefix}learner`;
    await eventually('the learner to commit past every input', async () => (await committedPastEnd(context, groupId, 'trajectories')) && committedPastEnd(context, groupId, 'rewards'), 120_000);
    const published = await readAll(context, 'policyCheckpoints');
    assert.deepEqual(published.map((c) => c.version), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 'one checkpoint per batch, none repeated');
    assert.equal(published.reduce((sum, c) => sum + c.metrics.samples + c.metrics.staleDropped, 0), 40, 'every sample counted exactly once');
    for (const [i, c] of published.entries()) assert.equal(c.parentVersion, i);
    const store = new LocalCheckpointStore(checkpoints);
    for (const c of published) assert.equal((await store.get(c.artifact!)).length, c.artifact!.bytes);
  } finally {
    await stopChild(learner);
  }
});

test('a batch of only stale samples publishes no version; its drops are reported on the next checkpoint', { timeout: 120_000 }, async () => {
  const context = await freshContext('learner-stale');
  const learner = createLearner(context, { runId: 'stale', store: new LocalCheckpointStore(tempDir('stale-ckpt')), batchSize: 2, maxStaleness: 0 });
  await learner.start();
  try {
    // Batch 1 is fresh (v0 samples, learner at v0); batch 2 lags one version, so it is dropped whole; batch 3 is fresh again.
    const pairs = [samplePair(0, 0), samplePair(1, 0), samplePair(2, 0), samplePair(3, 0), samplePair(4, 1), samplePair(5, 1)];
    for (const batch of [pairs.slice(0, 2), pairs.slice(2, 4), pairs.slice(4)]) {
      await sendRaw(context, 'trajectories', await Promise.all(batch.map(async (p) => ({ key: 'k', value: await context.serde.encode('trajectories', p.trajectory) }))));
      await sendRaw(context, 'rewards', await Promise.all(batch.map(async (p) => ({ key: 'k', value: await context.serde.encode('rewards', p.reward) }))));
      await eventually('the batch consumed', async () => learner.metrics.processed >= 2 * (pairs.indexOf(batch[1]!) + 1), 30_000);
    }
    await eventually('two checkpoints', async () => (await readAll(context, 'policyCheckpoints')).length >= 2, 30_000);
    const published = await readAll(context, 'policyCheckpoints');
    assert.deepEqual(published.map((c) => [c.version, c.metrics.samples, c.metrics.staleDropped]), [[1, 2, 0], [2, 2, 2]]);
  } finally {
    await learner.stop();
  }
});

/** The checkpoint stores the pins test runs on: the local folder and S3 on the stack's own server (a bucket of its own). */
const PIN_STORES: Record<string, () => Promise<CheckpointStore>> = {
  local: async () => new LocalCheckpointStore(tempDir('pins-ckpt')),
  s3: async () => {
    await stackUp((line) => console.log(`# ${line}`), [s3Component()]);
    const bucket = `it-pins-${randomUUID().slice(0, 8)}`;
    await ensureS3Bucket(`s3://${bucket}`);
    return openCheckpointStore(`s3://${bucket}/checkpoints`);
  },
};

for (const [kind, openStore] of Object.entries(PIN_STORES)) test(`workers follow the newest checkpoint, verify its artifact, and obey a rollback pin (checkpoints: ${kind})`, { timeout: 180_000 }, async () => {
  const context = await freshContext(`pins-${kind}`);
  const store = await openStore();
  const learner = createLearner(context, { runId: 'pins', store, batchSize: 2 });
  const seen: number[] = [];
  const tracker = await PolicyTracker.follow(context.kafka, context.serde, context.names, { store, onChange: (v) => seen.push(v) });
  await learner.start();
  try {
    const pairs = Array.from({ length: 6 }, (_, i) => samplePair(i));
    await sendRaw(context, 'trajectories', await Promise.all(pairs.map(async (p) => ({ key: 'k', value: await context.serde.encode('trajectories', p.trajectory) }))));
    await sendRaw(context, 'rewards', await Promise.all(pairs.map(async (p) => ({ key: 'k', value: await context.serde.encode('rewards', p.reward) }))));
    await eventually('version 3 served', async () => tracker.current().version === 3, 60_000);

    const [first] = await readAll(context, 'policyCheckpoints');
    const pin = { policyId: 'linear-repair', checkpoint: first!, reason: 'test rollback', createdAt: nowIso() };
    await sendRaw(context, 'policyPins', [{ key: 'linear-repair', value: await context.serde.encode('policyPins', pin) }]);
    await eventually('the pinned version served', async () => tracker.current().version === 1, 30_000);

    // A pin whose artifact digest does not match is ignored: workers keep the last good policy.
    const forged = { ...pin, checkpoint: { ...first!, version: 2, sha256: '0'.repeat(64), artifact: { ...first!.artifact!, sha256: '0'.repeat(64) } } };
    // The unpin right behind it on the same partition is handled after it: whatever the forged pin did shows
    // in the versions served before the unpin's.
    const servedBefore = seen.length;
    await sendRaw(context, 'policyPins', [{ key: 'linear-repair', value: await context.serde.encode('policyPins', forged) }]);
    await sendRaw(context, 'policyPins', [{ key: 'linear-repair', value: await context.serde.encode('policyPins', { ...pin, checkpoint: null }) }]);
    await eventually('the newest version served again', async () => tracker.current().version === 3, 30_000);
    assert.deepEqual(seen.slice(servedBefore), [3], 'the forged pin was never served');
    assert.deepEqual(seen.slice(0, 3), [1, 2, 3]);
  } finally {
    await learner.stop();
    await tracker.close();
  }
});
