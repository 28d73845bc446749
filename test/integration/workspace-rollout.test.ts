import assert from 'node:assert/strict';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { repoRoot } from '../../cli/paths.js';
import { LocalTreeStore } from '../../connectors/artifacts/index.js';
import { readTopic } from '../../connectors/kafka/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { WORKSPACE_ENV, type WorkspaceObservation } from '../../envs/index.js';
import { createRolloutWorker, type PolicySource } from '../../pipelines/rollout-worker/index.js';
import { publishTasks, resolveWorkspaceJob, runWorkspaceJob } from '../../pipelines/jobs/task-job/index.js';
import type { Action, Policy } from '../../policies/index.js';
import type { Task } from '../../schemas/index.js';
import { imageFor } from '../../stack/index.js';
import { ensureStack, eventually, freshContext, readAll, tempDir } from './harness.js';
import { workspaceMiniTasks } from './workspace-fixtures.js';

/**
 * The rollout side of workspace/v1 with claim checks: a task whose repository is 50 MB is published with its tree
 * in the artifact store (the record stays small), an episode runs on it, and the final tree comes back through
 * the store with the agent's change in it, made by bash.
 */
const MiB = 1024 * 1024;
/** The broker's default message.max.bytes (the topics set no larger one). */
const TOPIC_MAX_MESSAGE_BYTES = 1024 * 1024;
const TASK_DIR = join(repoRoot(), 'tasks', 'workspace-mini', 'inventory-remove');

/** A scripted agent for workspace/v1: fix the bug with sed through bash, look at the result, submit. */
function scriptedFixer(): Policy<WorkspaceObservation> {
  const moves: Action['action'][] = [
    { name: 'search', arguments: { pattern: 'quantity -= 1', path: 'inventory/*.py' } },
    { name: 'bash', arguments: { command: "sed -i 's/item.quantity -= 1/item.quantity -= quantity/' inventory/store.py && python3 -m pytest -q tests" } },
    { name: 'submit', arguments: {} },
  ];
  return { policyId: 'scripted-fixer', version: 0, act: async (observation) => ({ action: moves[observation.turn]!, decision: null }) };
}

let pool: DockerSandboxPool;
before(async () => {
  await ensureStack();
  pool = new DockerSandboxPool({ warmSize: 0, limits: { workspaceBytes: 160 * MiB, memoryBytes: 768 * MiB } });
});
after(async () => {
  await pool.close();
});

test('a 50 MB workspace travels as a claim check: small records, an episode on it, the final tree back through the store', { timeout: 900_000 }, async () => {
  const context = await freshContext('ws-claims');
  const trees = new LocalTreeStore(tempDir('ws-claims-store'));
  // The inventory task with 50 MB of vendored data files next to its package (each file distinct, so no blob is shared).
  const root = tempDir('ws-claims-task');
  cpSync(join(TASK_DIR, 'workspace'), join(root, 'workspace'), { recursive: true });
  mkdirSync(join(root, 'workspace', 'data'));
  for (let i = 0; i < 100; i++) writeFileSync(join(root, 'workspace', 'data', `chunk-${String(i).padStart(3, '0')}.txt`), `${`chunk ${i} `.repeat(1)}${'x'.repeat(512 * 1024 - 12)}\n`);
  const job = resolveWorkspaceJob({ name: 'ws-claims', env: WORKSPACE_ENV, tasks: [{ id: 'big-inventory', title: 'inventory with vendored data', description: 'Store.remove removes one item whatever the quantity; fix it.', workspace: join(root, 'workspace'), hidden: join(TASK_DIR, 'hidden') }] }, root);
  const report = await runWorkspaceJob({ job, rejectsDir: tempDir('ws-claims-rejects'), trees, context });
  assert.equal(report.publish?.added, 1);

  const records: Buffer[] = [];
  await readTopic(context.kafka, { topic: context.names.name('tasks'), onRecord: ({ value }) => void (value && records.push(value)) });
  assert.equal(records.length, 1);
  assert.ok(records[0]!.length < TOPIC_MAX_MESSAGE_BYTES / 100, `the task record is ${records[0]!.length} bytes`);
  const [published] = (await readAll(context, 'tasks')) as Task[];
  assert.deepEqual(published!.files, {});
  assert.ok(published!.stored?.files && published!.stored.files.bytes > 50 * 1000 * 1000, JSON.stringify(published!.stored));

  const source: PolicySource = { kind: { policyId: 'scripted-fixer', serves: [WORKSPACE_ENV] }, current: () => scriptedFixer() as Policy<unknown> };
  const worker = createRolloutWorker(context, { runId: 'ws-claims', pool, imageFor, policies: source, envIds: [WORKSPACE_ENV], trees, groupSize: 1, maxTurns: 6 });
  await worker.start();
  try {
    await eventually('the trajectory', async () => worker.metrics.committed.get(context.names.name('trajectories')) === 1, 600_000);
  } finally {
    await worker.stop();
  }
  const raw: Buffer[] = [];
  await readTopic(context.kafka, { topic: context.names.name('trajectories'), onRecord: ({ value }) => void (value && raw.push(value)) });
  assert.ok(raw[0]!.length < TOPIC_MAX_MESSAGE_BYTES / 10, `the trajectory record is ${raw[0]!.length} bytes`);
  const [trajectory] = await readAll(context, 'trajectories');
  assert.equal(trajectory!.outcome, 'submitted');
  assert.deepEqual(trajectory!.steps.map((step) => [step.toolCall.name, step.toolResult.ok]), [['search', true], ['bash', true], ['submit', true]]);
  assert.match(trajectory!.steps[0]!.toolResult.output, /^inventory\/store\.py:\d+: +item\.quantity -= 1$/m);
  assert.deepEqual(trajectory!.finalFiles, {});
  const final = await trees.get(trajectory!.finalFilesRef!);
  assert.match(final['inventory/store.py']!, /item\.quantity -= quantity/);
  assert.equal(Object.keys(final).filter((path) => path.startsWith('data/')).length, 100);
  assert.equal(final['data/chunk-042.txt'], (await trees.get(published!.stored!.files!))['data/chunk-042.txt']);
  assert.ok(!Object.keys(final).some((path) => path.startsWith('tests/hidden/')), 'the hidden tests never entered the sandbox');
});

test('a task of an environment the worker\'s policy does not serve is a dead letter naming both, and the worker goes on', { timeout: 300_000 }, async () => {
  const context = await freshContext('ws-mismatch');
  const [task] = await workspaceMiniTasks();
  const source: PolicySource = { kind: { policyId: 'linear-repair', serves: ['program-repair/v1'] }, current: () => scriptedFixer() as Policy<unknown> };
  const worker = createRolloutWorker(context, { runId: 'ws-mismatch', pool, imageFor, policies: source, groupSize: 1 });
  await worker.start();
  try {
    await publishTasks(context.kafka, context.serde, context.names, [task!]);
    await eventually('the dead letter', async () => worker.metrics.deadLettered === 1, 240_000);
  } finally {
    await worker.stop();
  }
  const [letter] = await readAll(context, 'deadLetters');
  assert.equal(letter!.processor, 'rollout-worker');
  assert.equal(letter!.error.retriable, false);
  assert.match(letter!.error.message, /policy linear-repair does not serve environment workspace\/v1: it serves program-repair\/v1/);
  assert.equal((await readAll(context, 'trajectories')).length, 0);
});
