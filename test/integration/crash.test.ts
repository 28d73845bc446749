import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { KAFKA_CLIENTS, type KafkaClientName } from '../../connectors/kafka/index.js';
import { prepareTasks, publishTasks } from '../../pipelines/jobs/task-job/index.js';
import { NO_WORKSPACE_EXTRAS, nowIso, type Trajectory } from '../../schemas/index.js';
import { childExit, stopChild } from '../../stack/index.js';
import { repoRoot } from '../../cli/paths.js';
import { committedPastEnd, ensureStack, eventually, freshContext, readAll, sendRaw, tempDir } from './harness.js';

before(ensureStack, { timeout: 900_000 });

/** The verifier as its own process, the way an operator runs it, on the test's topics, with the test's Kafka client. */
function startVerifier(prefix: string, client: KafkaClientName): ChildProcess {
  const child = spawn(process.execPath, [join(repoRoot(), 'bin', 'trialrun.js'), 'run', 'verifier', '--instance', '0', '--session-timeout-ms', '10000'], {
    env: { ...process.env, TRIALRUN_TOPIC_PREFIX: prefix, TRIALRUN_KAFKA_CLIENT: client },
    stdio: ['ignore', 'inherit', 'pipe'],
  });
  child.stderr!.on('data', (chunk: Buffer) => process.stderr.write(`# verifier: ${chunk.toString()}`));
  return child;
}


// Both clients (issue 46): the default must survive what kafkajs survives.
for (const client of KAFKA_CLIENTS) test(`a verifier killed mid-stream and restarted verifies every trajectory exactly once (${client})`, { timeout: 420_000 }, async () => {
  const context = await freshContext('crash', { client });
  const tasks = (await prepareTasks({ file: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'), rejectsDir: tempDir('crash') })).tasks.slice(0, 3);
  await publishTasks(context.kafka, context.serde, context.names, tasks);

  // Four samples per task: the reference fix passes, the untouched bug fails.
  const trajectories: Trajectory[] = tasks.flatMap((task) =>
    [0, 1, 2, 3].map((attempt) => ({
      trajectoryId: `crash/${task.taskId}/${attempt}`,
      groupId: `crash/${task.taskId}`,
      groupSize: 4,
      envId: task.envId,
      policyId: 'linear-repair',
      steps: [],
      finalFiles: attempt % 2 === 0 ? task.referenceSolution! : task.files,
      finalExtras: NO_WORKSPACE_EXTRAS,
      outcome: 'submitted' as const,
      error: null,
      totalMs: 1,
      sandboxMs: 1,
      lineage: { taskId: task.taskId, attempt, runId: 'crash', policyVersion: 0, sandboxImageDigest: null, verifierVersion: null, createdAt: nowIso() },
    })),
  );
  await sendRaw(context, 'trajectories', await Promise.all(trajectories.map(async (t) => ({ key: t.lineage.taskId, value: await context.serde.encode('trajectories', t) }))));

  let verifier = startVerifier(context.names.prefix, client);
  await eventually('the first committed verifications', async () => (await readAll(context, 'verifications')).length >= 2, 180_000);
  verifier.kill('SIGKILL');
  await childExit(verifier);
  const beforeRestart = (await readAll(context, 'verifications')).length;
  assert.ok(beforeRestart < trajectories.length, 'the kill landed mid-stream');

  verifier = startVerifier(context.names.prefix, client);
  try {
    await eventually('every trajectory verified', async () => (await readAll(context, 'verifications')).length >= trajectories.length, 240_000);
    // Once the verifier has committed past every trajectory, any duplicate the restart produced is visible.
    await eventually('the verifier to commit past every trajectory', () => committedPastEnd(context, `${context.names.prefix}verifier`, 'trajectories'), 240_000);
    const verifications = await readAll(context, 'verifications');
    assert.equal(verifications.length, trajectories.length, 'no trajectory verified twice');
    assert.deepEqual(verifications.map((v) => v.trajectoryId).sort(), trajectories.map((t) => t.trajectoryId).sort(), 'none lost');
    for (const v of verifications) assert.equal(v.passed, v.lineage.attempt % 2 === 0, `${v.trajectoryId}: the reference passes and the bug fails`);
  } finally {
    await stopChild(verifier);
  }
});
