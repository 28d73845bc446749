import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { AnalyticsCatalog } from '../../connectors/analytics/index.js';
import { openCheckpointStore } from '../../connectors/checkpoints/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { AnalyticsSink } from '../../pipelines/analytics-sink/index.js';
import { createLearner } from '../../pipelines/learner/index.js';
import { createRewardProcessor } from '../../pipelines/reward/index.js';
import { GlobalTable, type ProcessorContext } from '../../pipelines/runtime/index.js';
import { rescore } from '../../pipelines/jobs/rescore/index.js';
import { createVerifierProcessor, Verifier } from '../../pipelines/verifier/index.js';
import { ConfigError, type Task, type TopicKey, type TopicValue, type Trajectory } from '../../schemas/index.js';
import { imageFor } from '../../stack/index.js';
import { ensureStack, eventually, freshContext, readAll, tempDir } from './harness.js';
import { bundledTasks, trajectoryFor } from './verifier-fixtures.js';

const pool = new DockerSandboxPool();
before(ensureStack, { timeout: 900_000 });
after(() => pool.close());

async function produce<K extends TopicKey>(context: ProcessorContext, key: K, records: Array<{ key: string; value: TopicValue<K> }>): Promise<void> {
  const producer = context.kafka.producer();
  await producer.connect();
  try {
    const messages = await Promise.all(records.map(async (r) => ({ key: r.key, value: await context.serde.encode(key, r.value) })));
    await producer.send({ topic: context.names.name(key), messages });
  } finally {
    await producer.disconnect();
  }
}

test('live rewards, then a re-scoring under a new verifier version: old records intact, versions compared in SQL, nothing re-scored reaches the learner', { timeout: 420_000 }, async () => {
  const context = await freshContext('rescore');
  const dataDir = tempDir('rescore');
  const bundle = await bundledTasks(3);
  const [a, b, c] = [bundle[0]!, bundle[1]!, bundle[2]!];
  const fixedOf = (task: Task) => task.referenceSolution!;
  const group = (task: Task, files: Array<Record<string, string>>): Trajectory[] =>
    files.map((f, attempt) => trajectoryFor(task, f, { groupId: `live/${task.taskId}`, groupSize: files.length, attempt, runId: 'it-rescore' }));
  const trajectories = [
    ...group(a, [fixedOf(a), a.files]), // mixed: learns
    ...group(b, [b.files, b.files]), // all fail: no signal
    ...group(c, [{ ...fixedOf(c), 'conftest.py': 'import pytest\n' }, fixedOf(c)]), // a hack beside an honest pass
  ];
  await produce(context, 'tasks', [a, b, c].map((task) => ({ key: task.taskId, value: task })));
  await produce(context, 'trajectories', trajectories.map((t) => ({ key: t.lineage.taskId, value: t })));

  const tasks = await GlobalTable.load(context.kafka, context.serde, context.names, 'tasks');
  const verifierProcessor = createVerifierProcessor(context, { runId: 'it-rescore', pool, imageFor, tasks, referenceRuns: 1 });
  const reward = createRewardProcessor(context);
  const learner = createLearner(context, { runId: 'it-rescore', store: openCheckpointStore(tempDir('rescore-checkpoints')), batchSize: 2 });
  const sink = new AnalyticsSink(context, { dataDir, rollAgeMs: 500 });
  const processors = [verifierProcessor, reward, learner, sink];
  await Promise.all(processors.map((p) => p.start()));
  try {
    await eventually('six live rewards', async () => (await readAll(context, 'rewards')).length >= 6, 240_000);
    const live = await readAll(context, 'rewards');
    const liveVersion = live[0]!.lineage.verifierVersion!;
    assert.ok(live.every((r) => r.lineage.verifierVersion === liveVersion && (r.rescoreId ?? null) === null));
    const byTask = (taskId: string) => live.filter((r) => r.groupId === `live/${taskId}`).sort((x, y) => x.trajectoryId.localeCompare(y.trajectoryId));
    assert.deepEqual(byTask(a.taskId).map((r) => [r.reward, r.disposition]), [[1, 'learn'], [0, 'learn']]);
    assert.deepEqual(byTask(b.taskId).map((r) => [r.reward, r.disposition]), [[0, 'no-signal'], [0, 'no-signal']]);
    assert.deepEqual(byTask(c.taskId).map((r) => [r.reward, r.hacked, r.disposition]), [[0, true, 'learn'], [1, false, 'learn']]);

    // Dynamic sampling: only the four samples with signal reach the learner (two updates of two).
    await eventually('the learner has seen every record', async () => learner.metrics.processed >= 12, 60_000);
    await eventually('two checkpoints', async () => (await readAll(context, 'policyCheckpoints')).length >= 2, 60_000);
    const checkpoints = await readAll(context, 'policyCheckpoints');
    assert.equal(checkpoints.reduce((sum, cp) => sum + cp.metrics.samples, 0), 4, 'the no-signal pair never trained');

    await verifierProcessor.stop();
    // A different run budget is a different verifier: a new version to re-score under.
    const verifier = new Verifier({ runId: 'it-rescore-2', pool, imageFor, tasks, timeoutMs: 15_000, referenceRuns: 1 });
    const newVersion = await verifier.version();
    assert.notEqual(newVersion, liveVersion);
    await assert.rejects(rescore(context, verifier, { from: 'earliest', expectVersion: liveVersion }), (error: unknown) => error instanceof ConfigError && /is not the verifier this build runs/.test(error.message));

    const report = await rescore(context, verifier, { from: 'earliest', expectVersion: newVersion });
    assert.equal(report.verifierVersion, newVersion);
    assert.deepEqual([report.trajectoriesRead, report.verificationsWritten, report.rewardsWritten, report.skipped.length], [6, 6, 6, 0]);
    assert.deepEqual(report.dispositions, { learn: 4, 'no-signal': 2, withheld: 0, late: 0 });
    const again = await rescore(context, verifier, { from: 'earliest', expectVersion: newVersion });
    assert.deepEqual([again.rescoreId, again.verificationsWritten, again.rewardsWritten, again.rewardsAlreadyWritten], [report.rescoreId, 0, 0, 6], 're-running the same re-scoring writes nothing twice');

    const [verifications, rewards] = await Promise.all([readAll(context, 'verifications'), readAll(context, 'rewards')]);
    assert.equal(verifications.length, 12);
    assert.equal(rewards.length, 12);
    const byId = (list: typeof rewards) => [...list].sort((x, y) => x.rewardId.localeCompare(y.rewardId));
    assert.deepEqual(byId(rewards.filter((r) => (r.rescoreId ?? null) === null)), byId(live), 'the live rewards are untouched');
    const rescored = verifications.filter((v) => v.rescoreId === report.rescoreId);
    assert.ok(rescored.every((v) => v.lineage.verifierVersion === newVersion && v.verificationId.endsWith(`/${newVersion}/${report.rescoreId}`)));
    assert.ok(rescored.find((v) => v.lineage.taskId === c.taskId && v.hacks!.length > 0)?.hacks!.some((h) => h.kind === 'conftest'), 'the hack is flagged again');

    await eventually('both versions landed in Parquet', async () => (sink.rowsWritten.get('rewards') ?? 0) >= 12 && (sink.rowsWritten.get('verifications') ?? 0) >= 12, 60_000);
    await eventually('the learner saw the re-scored rewards', async () => learner.metrics.processed >= 18, 60_000);
    assert.equal((await readAll(context, 'policyCheckpoints')).length, 2, 're-scored rewards never train');

    const catalog = await AnalyticsCatalog.open(dataDir);
    try {
      const perVersion = await catalog.query('SELECT verifier_version, count(*) AS n, sum(reward) AS total, count(rescore_id) AS rescored FROM rewards GROUP BY 1 ORDER BY 4');
      assert.deepEqual(perVersion.rows.map((row) => row.map(String)), [
        [liveVersion, '6', '2', '0'],
        [newVersion, '6', '2', '6'],
      ]);
      const agreement = await catalog.query(
        `SELECT count(*) FROM verifications old JOIN verifications new USING (trajectory_id)
         WHERE old.verifier_version = '${liveVersion}' AND new.verifier_version = '${newVersion}' AND old.passed = new.passed`,
      );
      assert.equal(Number(agreement.rows[0]![0]), 6, 'the two versions agree on every trajectory, side by side in SQL');
      const noSignal = await catalog.query("SELECT verifier_version, count(*) FROM rewards WHERE disposition = 'no-signal' GROUP BY 1");
      assert.equal(noSignal.rows.length, 2, 'no-signal groups are counted and visible per version');
      const hacked = await catalog.query("SELECT count(*) FROM verifications, unnest(hacks) AS h(flag) WHERE flag.kind = 'conftest'");
      assert.equal(Number(hacked.rows[0]![0]), 2);
    } finally {
      catalog.close();
    }
  } finally {
    await Promise.allSettled(processors.map((p) => p.stop()));
    await tasks.close();
  }
});
