import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { repoRoot } from '../../cli/paths.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { PROGRAM_REPAIR_ENV } from '../../envs/index.js';
import { prepareTasks } from '../../pipelines/jobs/task-job/index.js';
import { createRolloutWorkerLanes, type PolicySource } from '../../pipelines/rollout-worker/index.js';
import type { Policy } from '../../policies/index.js';
import { imageFor } from '../../stack/index.js';
import { committedPastEnd, ensureStack, eventually, freshContext, readAll, tempDir } from './harness.js';

/**
 * A rollout worker of two lanes rolls out two tasks at once: while the first task it admits is held (its
 * rollout cannot start), the other lane rolls out and commits the second. With one task at a time per worker
 * the second would wait behind the first for ever. Counts stay exact: G trajectories per task, each once.
 */
const GROUP = 2;
const pool = new DockerSandboxPool({ maxSandboxes: 4 });
before(ensureStack, { timeout: 900_000 });
after(() => pool.close());

/** Submits at once: the episode is one sandbox start and one tool call. */
const submitter: Policy<unknown> = { policyId: 'scripted-submit', version: 0, act: async () => ({ action: { name: 'submit', arguments: {} }, decision: null }) };

test('a held task does not stop another task of the same worker from being rolled out; every sample exactly once', { timeout: 600_000 }, async () => {
  const context = await freshContext('rollout-lanes');
  const prepared = await prepareTasks({ file: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'), rejectsDir: tempDir('rollout-lanes') });
  const [held, free] = prepared.tasks;
  const trajectoriesTopic = context.names.name('trajectories');
  const source: PolicySource = { kind: { policyId: submitter.policyId, serves: [PROGRAM_REPAIR_ENV] }, current: () => submitter };

  // The first task admitted waits until the other one's samples are committed; any later one goes straight on.
  let admitted = 0;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const lanes = createRolloutWorkerLanes(context, {
    runId: 'rollout-lanes', pool, imageFor, policies: source, envIds: [PROGRAM_REPAIR_ENV], groupSize: GROUP, maxTurns: 3, concurrency: GROUP, lanes: 2,
    admit: async () => {
      if (++admitted === 1) await released;
    },
  });
  assert.deepEqual(lanes.map((lane) => lane.instanceId), ['0.0', '0.1'], 'each lane its own instance, and so its own transactional id');
  await Promise.all(lanes.map((lane) => lane.start()));
  try {
    // Both lanes in the group before anything is published, so each task goes to the lane owning its partition.
    await eventually('both lanes hold partitions', async () => lanes.every((lane) => lane.assignment.length > 0));
    const [first, second] = lanes.map((lane) => lane.assignment[0]!.partition);
    const producer = context.kafka.producer();
    await producer.connect();
    await producer.send({
      topic: context.names.name('tasks'),
      messages: [
        { key: held!.taskId, value: await context.serde.encode('tasks', held!), partition: first },
        { key: free!.taskId, value: await context.serde.encode('tasks', free!), partition: second },
      ],
    });
    await producer.disconnect();

    const committed = (): number => lanes.reduce((sum, lane) => sum + (lane.metrics.committed.get(trajectoriesTopic) ?? 0), 0);
    await eventually('the other lane committed its task while the first is held', async () => committed() === GROUP, 300_000);
    assert.equal(admitted, 2, 'both tasks were admitted: one held, one rolled out');
    release();
    await eventually('every sample of both tasks', async () => committed() === 2 * GROUP, 300_000);
    await eventually('the group committed past both tasks', () => committedPastEnd(context, `${context.names.prefix}rollout-worker`, 'tasks'), 60_000);
  } finally {
    release();
    await Promise.all(lanes.map((lane) => lane.stop()));
  }
  const trajectories = await readAll(context, 'trajectories');
  const byTask = (taskId: string): string[] => trajectories.filter((t) => t.lineage.taskId === taskId).map((t) => t.trajectoryId);
  assert.equal(trajectories.length, 2 * GROUP);
  assert.equal(new Set(trajectories.map((t) => t.trajectoryId)).size, 2 * GROUP, 'no sample twice');
  assert.equal(byTask(held!.taskId).length, GROUP);
  assert.equal(byTask(free!.taskId).length, GROUP);
});
