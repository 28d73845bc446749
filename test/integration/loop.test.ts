import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { join } from 'node:path';
import { AnalyticsCatalog } from '../../connectors/analytics/index.js';
import { LocalCheckpointStore } from '../../connectors/checkpoints/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { runLoop } from '../../pipelines/loop/index.js';
import { prepareTasks, publishTasks } from '../../pipelines/jobs/task-job/index.js';
import { nowIso, type Verification } from '../../schemas/index.js';
import { imageFor } from '../../stack/index.js';
import { repoRoot } from '../../cli/paths.js';
import { ensureStack, freshContext, readAll, sendRaw, tempDir } from './harness.js';

const pool = new DockerSandboxPool();
before(ensureStack, { timeout: 900_000 });
after(() => pool.close());

test('the whole loop over a few tasks lands consistent records in every topic and in DuckDB', { timeout: 600_000 }, async () => {
  const context = await freshContext('loop');
  const dataDir = tempDir('loop');
  const summary = await runLoop(context, {
    taskFile: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'),
    dataDir,
    pool,
    imageFor,
    checkpoints: new LocalCheckpointStore(tempDir('checkpoints')),
    limitTasks: 3,
    groupSize: 2,
    batchSize: 2,
    maxTurns: 8,
    rolloutWorkers: 2,
  });
  assert.equal(summary.tasks, 3);
  assert.equal(summary.trajectories, 6);
  // Each stage's throughput counts what it committed; every reward and trajectory is counted once by disposition and outcome.
  assert.deepEqual([summary.stages['rollout-worker']?.records, summary.stages.verifier?.records, summary.stages.reward?.records], [6, 6, 6]);
  assert.equal(summary.stages.learner?.records, summary.checkpoints);
  // The learner may publish nothing (a batch of no-signal groups); a stage that wrote records was busy for them.
  assert.ok(Object.values(summary.stages).every((stage) => stage.records === 0 || (stage.busySeconds > 0 && stage.perMinute > 0)), JSON.stringify(summary.stages));
  assert.equal(Object.values(summary.rewardDispositions).reduce((a, b) => a + b, 0), 6);
  assert.equal(Object.values(summary.outcomes).reduce((a, b) => a + b, 0), 6);

  const [tasks, trajectories, verifications, rewards, checkpoints, deadLetters] = await Promise.all([
    readAll(context, 'tasks'),
    readAll(context, 'trajectories'),
    readAll(context, 'verifications'),
    readAll(context, 'rewards'),
    readAll(context, 'policyCheckpoints'),
    readAll(context, 'deadLetters'),
  ]);
  assert.equal(tasks.length, 3);
  assert.equal(trajectories.length, 6);
  assert.deepEqual(deadLetters, []);
  // Exactly one verification and one reward per trajectory.
  const ids = trajectories.map((t) => t.trajectoryId).sort();
  assert.deepEqual(verifications.map((v) => v.trajectoryId).sort(), ids);
  assert.deepEqual(rewards.map((r) => r.trajectoryId).sort(), ids);
  // Dynamic sampling: only rewards with signal train, one update per batch of two.
  const learnable = rewards.filter((r) => (r.disposition ?? 'learn') === 'learn').length;
  assert.equal(checkpoints.length, Math.floor(learnable / 2), 'one checkpoint per batch of samples with signal; no-signal groups never reach the learner');
  assert.deepEqual(checkpoints.map((c) => c.version), checkpoints.map((_, i) => i + 1), 'versions count up from 1');

  for (const t of trajectories) {
    assert.equal(t.lineage.runId, summary.runId);
    assert.match(t.lineage.sandboxImageDigest ?? '', /^sha256:/);
    assert.ok(t.steps.length > 0 && t.steps.length <= 8);
    assert.ok(!Object.keys(t.finalFiles).some((path) => path.startsWith('test_hidden')), 'hidden tests never enter the agent sandbox');
  }
  for (const v of verifications) {
    assert.match(v.lineage.verifierVersion ?? '', /^v-[0-9a-f]{12}$/);
    assert.ok(v.testsTotal > 0);
    assert.equal(v.passed, v.testsPassed === v.testsTotal && v.failure === null);
  }
  for (const group of new Set(rewards.map((r) => r.groupId))) {
    const members = rewards.filter((r) => r.groupId === group);
    assert.equal(members.length, 2);
    assert.ok(Math.abs(members.reduce((sum, r) => sum + r.advantage, 0)) < 1e-6, 'advantages are centred per group');
  }

  const catalog = await AnalyticsCatalog.open(dataDir);
  try {
    const count = async (sql: string): Promise<number> => Number((await catalog.query(sql)).rows[0]![0]);
    assert.equal(await count('SELECT count(*) FROM trajectories'), 6);
    assert.equal(await count('SELECT count(*) FROM verifications'), 6);
    assert.equal(await count('SELECT count(*) FROM rewards'), 6);
    assert.equal(await count('SELECT count(*) FROM checkpoints'), checkpoints.length);
    assert.equal(await count('SELECT count(*) FROM steps'), trajectories.reduce((sum, t) => sum + t.steps.length, 0));
    assert.equal(
      await count('SELECT count(*) FROM verifications WHERE passed'),
      verifications.filter((v) => v.passed).length,
      'DuckDB agrees with the topic on pass counts',
    );
  } finally {
    catalog.close();
  }
});

test('a run leaves alone what an interrupted run left on the shared topics', { timeout: 600_000 }, async () => {
  const context = await freshContext('loop-leftovers');
  const taskFile = join(repoRoot(), 'tasks', 'repair-bundle.jsonl');
  // What an interrupted run leaves: tasks no worker took yet, and a verification no reward processor scored.
  const prepared = await prepareTasks({ file: taskFile, rejectsDir: tempDir('rejects'), jobRunId: 'interrupted' });
  await publishTasks(context.kafka, context.serde, context.names, prepared.tasks.slice(0, 2));
  const stale: Verification = {
    verificationId: 'interrupted-v', trajectoryId: 'interrupted-t', groupId: 'interrupted-g', groupSize: 1, passed: true,
    tests: [], testsPassed: 1, testsTotal: 1, fractionPassed: 1, failure: null, durationMs: 1,
    lineage: { taskId: prepared.tasks[0]!.taskId, attempt: 0, runId: 'interrupted', policyVersion: 0, sandboxImageDigest: null, verifierVersion: null, createdAt: nowIso() },
  };
  await sendRaw(context, 'verifications', [{ key: stale.groupId, value: await context.serde.encode('verifications', stale) }]);

  const summary = await runLoop(context, {
    taskFile, dataDir: tempDir('loop-leftovers'), pool, imageFor, checkpoints: new LocalCheckpointStore(tempDir('checkpoints')),
    limitTasks: 1, groupSize: 2, batchSize: 2, maxTurns: 5,
  });
  assert.equal(summary.trajectories, 2, 'only the task this run published was rolled out');
  const trajectories = await readAll(context, 'trajectories');
  assert.deepEqual(trajectories.map((t) => t.lineage.runId), [summary.runId, summary.runId]);
  const rewards = await readAll(context, 'rewards');
  assert.ok(rewards.every((r) => r.lineage.runId === summary.runId), 'the other run\'s verification was not scored');
  assert.equal(rewards.length, 2);
});
