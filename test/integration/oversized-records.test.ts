import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { LocalTreeStore } from '../../connectors/artifacts/index.js';
import { KAFKA_CLIENTS, readTopic, type KafkaClientName } from '../../connectors/kafka/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { WORKSPACE_ENV, type WorkspaceObservation } from '../../envs/index.js';
import { publishTasks, resolveWorkspaceJob, runWorkspaceJob } from '../../pipelines/jobs/task-job/index.js';
import { createRewardProcessor } from '../../pipelines/reward/index.js';
import { createRolloutWorker, type PolicySource } from '../../pipelines/rollout-worker/index.js';
import { GlobalTable, type ProcessorContext } from '../../pipelines/runtime/index.js';
import { createVerifierProcessor } from '../../pipelines/verifier/index.js';
import type { Action, Policy } from '../../policies/index.js';
import { errorMessage, isRetriable, nowIso, RecordTooLargeError, type DeadLetter, type Task, type TopicKey, type Verification } from '../../schemas/index.js';
import { imageFor } from '../../stack/index.js';
import { ensureStack, eventually, freshContext, readAll, sendRaw, tempDir } from './harness.js';
import { trajectoryFor } from './verifier-fixtures.js';
import { workspaceMiniTasks } from './workspace-fixtures.js';

/**
 * A record too large for its topic never stalls a partition: the broker's refusal is not retriable with either
 * client, and a processor whose output is too large dead-letters its input with that reason and goes on. Each
 * processor is run against topics whose max.message.bytes is set small, so an ordinary record is too large.
 */
const MiB = 1024 * 1024;
let pool: DockerSandboxPool;
before(async () => {
  await ensureStack();
  pool = new DockerSandboxPool({ warmSize: 0, limits: { memoryBytes: 768 * MiB } });
});
after(() => pool?.close());

const limited = (bytes: number): Record<string, string> => ({ 'max.message.bytes': String(bytes) });

/** The dead letters `processor` wrote because an output was too large, after checking each says so. */
async function tooLargeLetters(context: ProcessorContext, processor: string): Promise<DeadLetter[]> {
  const letters = (await readAll(context, 'deadLetters')).filter((letter) => letter.processor === processor);
  for (const letter of letters) {
    assert.equal(letter.error.name, 'RecordTooLargeError', JSON.stringify(letter.error));
    assert.equal(letter.error.retriable, false);
    assert.equal(letter.attempts, 1, 'never retried');
    assert.match(letter.error.message, /above the \d+ bytes/);
  }
  return letters;
}

/** The error `send` fails with; failing the test when it succeeds. */
async function refusal(send: () => Promise<void>): Promise<unknown> {
  return send().then(
    () => assert.fail('the broker took a record above the topic\'s max.message.bytes'),
    (error: unknown) => error,
  );
}

for (const client of KAFKA_CLIENTS as readonly KafkaClientName[]) {
  test(`${client}: the broker's refusal of a record above the topic's max.message.bytes is a RecordTooLargeError, never retried, in a transaction too`, { timeout: 120_000 }, async () => {
    const context = await freshContext(`too-large-${client}`, { client }, { rewards: limited(2000) });
    const topic = context.names.name('rewards');
    const record = { topic, messages: [{ key: 'k', value: Buffer.alloc(5000, 'x') }] };
    const producer = context.kafka.producer();
    await producer.connect();
    try {
      const plain = await refusal(() => producer.send(record));
      assert.ok(plain instanceof RecordTooLargeError && !isRetriable(plain), `${String(plain)}`);
    } finally {
      await producer.disconnect();
    }
    const transactional = context.kafka.producer({ transactionalId: `${context.names.prefix}too-large` });
    await transactional.connect();
    try {
      const transaction = await transactional.transaction();
      const inTransaction = await refusal(() => transaction.sendBatch([record]));
      assert.ok(inTransaction instanceof RecordTooLargeError && !isRetriable(inTransaction), errorMessage(inTransaction));
      await transaction.abort().catch(() => undefined);
    } finally {
      await transactional.disconnect();
    }
  });

  test(`${client}: reward: a group whose rewards are too large for the rewards topic is dead-lettered, and the groups after it are rewarded`, { timeout: 180_000 }, async () => {
    // A reward carries its group id four times over (ids, lineage): 1500 characters of it are too much for 4000 bytes.
    const context = await freshContext(`too-large-reward-${client}`, { client }, { rewards: limited(4000) });
    const verification = (group: string, attempt: number, passed: boolean): Verification => ({
      verificationId: `${group}/${attempt}/v-test`,
      trajectoryId: `${group}/${attempt}`,
      groupId: group,
      groupSize: 2,
      passed,
      tests: [],
      testsPassed: 0,
      testsTotal: 0,
      fractionPassed: passed ? 1 : 0,
      failure: null,
      durationMs: 1,
      hacks: [],
      quarantine: null,
      rescoreId: null,
      lineage: { taskId: `task-${group.slice(0, 20)}`, attempt, runId: 'it', policyVersion: 0, sandboxImageDigest: null, verifierVersion: 'v-test', createdAt: nowIso() },
    });
    const huge = `huge-${'g'.repeat(1500)}`;
    const items = [verification(huge, 0, true), verification(huge, 1, false), verification('small-a', 0, true), verification('small-a', 1, false), verification('small-b', 0, false), verification('small-b', 1, true)];
    await sendRaw(context, 'verifications', await Promise.all(items.map(async (value) => ({ key: 'one-partition', value: await context.serde.encode('verifications', value) }))));
    const processor = createRewardProcessor(context, { stragglerDeadlineMs: 600_000 });
    await processor.start();
    try {
      await eventually('the rewards of the later groups', async () => (await readAll(context, 'rewards')).length >= 4, 120_000);
      await eventually('the dead letter', async () => (await readAll(context, 'deadLetters')).length >= 1, 60_000);
    } finally {
      await processor.stop();
    }
    const rewards = await readAll(context, 'rewards');
    assert.deepEqual(rewards.map((r) => r.groupId).sort(), ['small-a', 'small-a', 'small-b', 'small-b']);
    const [letter, ...more] = await tooLargeLetters(context, 'reward');
    assert.equal(more.length, 0);
    // The group's second member closed it: that verification is the input that made the rewards.
    const input = await context.serde.decode('verifications', Buffer.from(letter!.value!, 'base64'));
    assert.equal(input.trajectoryId, `${huge}/1`);
    assert.match(letter!.error.message, new RegExp(`to ${context.names.name('rewards').replace(/\./g, '\\.')}, above the 4000 bytes`));
  });
}

for (const client of KAFKA_CLIENTS as readonly KafkaClientName[]) {
  test(`${client}: rewards that fit one by one but not together in one transaction are all committed, one input per transaction`, { timeout: 180_000 }, async () => {
    // Six groups of one, each closing with a reward of about 1.5 KB: 9 KB in all for a topic that takes 4000 bytes.
    const context = await freshContext(`too-large-together-${client}`, { client }, { rewards: limited(4000) });
    const groups = Array.from({ length: 6 }, (_, i) => `group-${i}-${'g'.repeat(300)}`);
    const items = groups.map((group): Verification => ({
      verificationId: `${group}/0/v-test`,
      trajectoryId: `${group}/0`,
      groupId: group,
      groupSize: 1,
      passed: true,
      tests: [],
      testsPassed: 0,
      testsTotal: 0,
      fractionPassed: 1,
      failure: null,
      durationMs: 1,
      hacks: [],
      quarantine: null,
      rescoreId: null,
      lineage: { taskId: 'task', attempt: 0, runId: 'it', policyVersion: 0, sandboxImageDigest: null, verifierVersion: 'v-test', createdAt: nowIso() },
    }));
    await sendRaw(context, 'verifications', await Promise.all(items.map(async (value) => ({ key: 'one-partition', value: await context.serde.encode('verifications', value) }))));
    const processor = createRewardProcessor(context, { stragglerDeadlineMs: 600_000, minGroupSize: 1 });
    await processor.start();
    try {
      await eventually('all six rewards', async () => (await readAll(context, 'rewards')).length >= 6, 120_000);
    } finally {
      await processor.stop();
    }
    assert.deepEqual((await readAll(context, 'rewards')).map((r) => r.groupId).sort(), [...groups].sort());
    assert.deepEqual(await readAll(context, 'deadLetters'), []);
  });
}

/** A scripted workspace/v1 agent: fixes inventory-remove's bug with sed, leaves `extraFiles()` empty files under aaa/ (sorted before the package), submits. */
function fixerLeavingFiles(extraFiles: () => number): Policy<WorkspaceObservation> {
  return {
    policyId: 'scripted-fixer',
    version: 0,
    act: async (observation) => {
      const count = extraFiles();
      const moves: Action['action'][] = [
        { name: 'bash', arguments: { command: `sed -i 's/item.quantity -= 1/item.quantity -= quantity/' inventory/store.py && mkdir -p aaa && cd aaa && seq -f 'leftover-%06g.txt' 1 ${count} | xargs -r touch` } },
        { name: 'submit', arguments: {} },
      ];
      return { action: moves[observation.turn]!, decision: null };
    },
  };
}

const inventoryTask = async (taskId: string): Promise<Task> => {
  const task = (await workspaceMiniTasks()).find((t) => t.taskId.includes('inventory-remove'));
  assert.ok(task, 'workspace-mini has the inventory-remove task');
  return { ...task, taskId };
};

test('rollout worker: a trajectory too large for the trajectories topic (an agent left 6000 files, no tree store) is dead-lettered, and the next task is rolled out', { timeout: 600_000 }, async () => {
  const context = await freshContext('too-large-rollout', {}, { trajectories: limited(60_000) });
  let extra = 6000;
  const source: PolicySource = { kind: { policyId: 'scripted-fixer', serves: [WORKSPACE_ENV] }, current: () => fixerLeavingFiles(() => extra) as Policy<unknown> };
  const worker = createRolloutWorker(context, { runId: 'too-large', pool, imageFor, policies: source, envIds: [WORKSPACE_ENV], groupSize: 1, maxTurns: 4 });
  await worker.start();
  try {
    await publishTasks(context.kafka, context.serde, context.names, [await inventoryTask('flooding')]);
    await eventually('the dead letter', async () => worker.metrics.deadLettered === 1, 400_000);
    extra = 0;
    await publishTasks(context.kafka, context.serde, context.names, [await inventoryTask('tidy')]);
    await eventually('the next trajectory', async () => worker.metrics.committed.get(context.names.name('trajectories')) === 1, 400_000);
  } finally {
    await worker.stop();
  }
  const [trajectory, ...others] = await readAll(context, 'trajectories');
  assert.deepEqual([trajectory!.lineage.taskId, others.length], ['tidy', 0]);
  const [letter] = await tooLargeLetters(context, 'rollout-worker');
  assert.equal((await context.serde.decode('tasks', Buffer.from(letter!.value!, 'base64'))).taskId, 'flooding');
});

test('verifier: a verification too large for the verifications topic is dead-lettered, and the trajectories after it are verified', { timeout: 600_000 }, async () => {
  // A verification carries its group id three times over: 6000 characters of it are too much for 12000 bytes.
  const context = await freshContext('too-large-verifier', {}, { verifications: limited(12_000) });
  const task = await inventoryTask('inventory');
  await publishTasks(context.kafka, context.serde, context.names, [task]);
  const tasks = await GlobalTable.load(context.kafka, context.serde, context.names, 'tasks');
  const verifier = createVerifierProcessor(context, { runId: 'too-large', pool, imageFor, tasks, referenceRuns: 1, timeoutMs: 60_000 });
  try {
    await verifier.start();
    const fixed = { ...task.files, ...task.referenceSolution };
    const trajectories = [trajectoryFor(task, fixed, { groupId: `huge-${'g'.repeat(6000)}` }), trajectoryFor(task, fixed, { groupId: 'ordinary' })];
    await sendRaw(context, 'trajectories', await Promise.all(trajectories.map(async (t) => ({ key: 'one-partition', value: await context.serde.encode('trajectories', t) }))));
    await eventually('the later verification', async () => (await readAll(context, 'verifications')).length >= 1, 400_000);
    await eventually('the dead letter', async () => verifier.metrics.deadLettered >= 1, 60_000);
  } finally {
    await verifier.stop();
    await tasks.close();
  }
  const verifications = await readAll(context, 'verifications');
  assert.deepEqual(verifications.map((v) => [v.groupId, v.passed]), [['ordinary', true]]);
  const [letter, ...more] = await tooLargeLetters(context, 'verifier');
  assert.equal(more.length, 0);
  assert.match((await context.serde.decode('trajectories', Buffer.from(letter!.value!, 'base64'))).groupId, /^huge-g+$/);
});

/** The largest committed record of each topic, in bytes. */
async function largestRecords(context: ProcessorContext, keys: readonly TopicKey[]): Promise<Record<string, number>> {
  const sizes: Record<string, number> = {};
  for (const key of keys) {
    let largest = 0;
    await readTopic(context.kafka, { topic: context.names.name(key), onRecord: ({ value }) => void (largest = Math.max(largest, value?.length ?? 0)) });
    sizes[key] = largest;
  }
  return sizes;
}

test("the issue's episode: an agent that fixes the bug and leaves 600, then 16,000 files passes, and every record stays small", { timeout: 900_000 }, async (t) => {
  const context = await freshContext('many-files');
  const trees = new LocalTreeStore(tempDir('many-files-store'));
  const counts = [600, 16_000];
  let episode = 0;
  const source: PolicySource = { kind: { policyId: 'scripted-fixer', serves: [WORKSPACE_ENV] }, current: () => fixerLeavingFiles(() => counts[Math.min(episode, counts.length - 1)]!) as Policy<unknown> };
  const worker = createRolloutWorker(context, { runId: 'many-files', pool, imageFor, policies: source, envIds: [WORKSPACE_ENV], trees, groupSize: 1, maxTurns: 4 });
  const tasks = await GlobalTable.load(context.kafka, context.serde, context.names, 'tasks');
  const verifier = createVerifierProcessor(context, { runId: 'many-files', pool, imageFor, tasks, referenceRuns: 1, timeoutMs: 60_000, trees });
  try {
    await Promise.all([worker.start(), verifier.start()]);
    for (const [index, count] of counts.entries()) {
      episode = index;
      await publishTasks(context.kafka, context.serde, context.names, [await inventoryTask(`leaves-${count}`)]);
      await eventually(`the verification of the episode that left ${count} files`, async () => (await readAll(context, 'verifications')).length === index + 1, 500_000);
    }
  } finally {
    await Promise.allSettled([worker.stop(), verifier.stop()]);
    await tasks.close();
  }
  assert.deepEqual(await readAll(context, 'deadLetters'), []);
  const verifications = await readAll(context, 'verifications');
  for (const [index, count] of counts.entries()) {
    const verification = verifications[index]!;
    assert.equal(verification.lineage.taskId, `leaves-${count}`);
    assert.deepEqual([verification.passed, verification.hacks, verification.failure], [true, [], null], JSON.stringify(verification).slice(0, 2000));
    // The task's own files first, then 500 of what the agent added: the rest counted, the first 20 named.
    assert.equal(verification.unwritten?.count, count - 500);
    assert.equal(verification.unwritten?.paths.length, 20);
  }
  const trajectories = await readAll(context, 'trajectories');
  assert.ok(trajectories[1]!.finalFilesRef, 'the tree of 16,000 files travelled as a claim check');
  const sizes = await largestRecords(context, ['tasks', 'trajectories', 'verifications']);
  t.diagnostic(`largest records (bytes): ${JSON.stringify(sizes)}`);
  for (const [topic, bytes] of Object.entries(sizes)) assert.ok(bytes < 64 * 1024, `${topic}: ${bytes} bytes`);
});

test("task job: a task record larger than the tasks topic takes, as the broker says, goes to the rejects file and the rest are published", { timeout: 300_000 }, async () => {
  const context = await freshContext('too-large-tasks', {}, { tasks: limited(40_000) });
  const root = tempDir('too-large-tasks');
  for (const [name, bytes] of [['big', 60_000], ['small', 100]] as const) {
    mkdirSync(join(root, name, 'workspace'), { recursive: true });
    mkdirSync(join(root, name, 'hidden', 'tests'), { recursive: true });
    writeFileSync(join(root, name, 'workspace', 'data.txt'), 'x'.repeat(bytes));
    writeFileSync(join(root, name, 'hidden', 'tests', 'test_data.py'), 'def test_data():\n    assert open("data.txt").read()\n');
  }
  const tasks = ['big', 'small'].map((name) => ({ id: `task-${name}`, title: name, description: `the ${name} one`, workspace: join(root, name, 'workspace'), hidden: join(root, name, 'hidden') }));
  const job = resolveWorkspaceJob({ name: 'too-large-tasks', env: WORKSPACE_ENV, tasks }, root);
  const report = await runWorkspaceJob({ job, rejectsDir: tempDir('too-large-rejects'), trees: new LocalTreeStore(tempDir('too-large-trees')), context });
  assert.deepEqual([report.publish?.added, report.rejected], [1, 1]);
  const [reject] = readFileSync(report.rejectsFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { taskId?: string; reason: string });
  assert.match(JSON.stringify(reject), /publish\.maxRecordBytes is 38879 /);
  assert.deepEqual((await readAll(context, 'tasks')).map((t) => t.taskId), ['task-small']);
});
