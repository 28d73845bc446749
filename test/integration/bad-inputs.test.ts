import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { LocalCheckpointStore } from '../../connectors/checkpoints/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { createLearner } from '../../pipelines/learner/index.js';
import { createRewardProcessor } from '../../pipelines/reward/index.js';
import { createRolloutWorker, PolicyTracker } from '../../pipelines/rollout-worker/index.js';
import { GlobalTable, type ProcessorContext } from '../../pipelines/runtime/index.js';
import { prepareTasks, publishTasks } from '../../pipelines/jobs/task-job/index.js';
import { createVerifierProcessor } from '../../pipelines/verifier/index.js';
import { nowIso, type DeadLetter, type Task, type TopicKey, type Verification } from '../../schemas/index.js';
import { imageFor } from '../../stack/index.js';
import { repoRoot } from '../../cli/paths.js';
import { ensureStack, eventually, freshContext, readAll, sendRaw, tempDir } from './harness.js';

const pool = new DockerSandboxPool();
before(ensureStack, { timeout: 900_000 });
after(() => pool.close());

const lineage = (taskId: string, attempt = 0) => ({ taskId, attempt, runId: 'it', policyVersion: 0, sandboxImageDigest: null, verifierVersion: null, createdAt: nowIso() });

async function someTasks(count: number): Promise<Task[]> {
  const prepared = await prepareTasks({ file: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'), rejectsDir: tempDir('rejects') });
  return prepared.tasks.slice(0, count);
}

/** A poison record of each kind on `topic`, then the dead letters they became. */
async function poison(context: ProcessorContext, topic: TopicKey): Promise<Buffer[]> {
  const notFramed = Buffer.from('{"this":"is not in the registry wire format"}');
  // Registry-framed, but with another subject's schema id (the dead-letter schema).
  const valid = await context.serde.encode('deadLetters', {
    processor: 'x', sourceTopic: 'x', partition: 0, offset: '0', key: null, value: null, headers: {},
    error: { name: 'E', message: 'm', retriable: false, stage: 'handle' }, attempts: 1, failedAt: nowIso(),
  });
  const otherSubject = valid;
  // Registry-framed with the topic's own schema id, but the JSON breaks the contract.
  const own = Buffer.alloc(5);
  own.writeInt32BE(await context.serde.schemaId(topic), 1);
  const wrongContract = Buffer.concat([own, Buffer.from('{"unexpected":true}')]);
  await sendRaw(context, topic, [
    { key: 'poison-1', value: notFramed },
    { key: 'poison-2', value: otherSubject },
    { key: 'poison-3', value: wrongContract },
  ]);
  return [notFramed, otherSubject, wrongContract];
}

function assertDeadLettered(letters: DeadLetter[], processor: string, topic: string, originals: Buffer[]): void {
  const mine = letters.filter((l) => l.processor === processor && l.sourceTopic === topic);
  assert.equal(mine.length, originals.length, `${processor} dead-lettered every poison record from ${topic}`);
  assert.deepEqual(mine.map((l) => Buffer.from(l.value!, 'base64')).sort(Buffer.compare), [...originals].sort(Buffer.compare), 'original bytes are kept');
  // The last poison record is framed with the topic's own schema id: it decodes, and breaks the contract.
  const breaksContract = originals[originals.length - 1]!;
  for (const letter of mine) {
    assert.equal(letter.error.retriable, false);
    if (Buffer.from(letter.value!, 'base64').equals(breaksContract)) {
      assert.equal(letter.error.stage, 'validate');
      assert.match(letter.error.message, /record is invalid: .*expected string, received undefined/);
    } else {
      assert.equal(letter.error.stage, 'decode');
      assert.match(letter.error.message, /record could not be decoded/);
    }
  }
}

test('a poison record on every input topic ends in the dead-letter topic with its reason, and processing goes on', { timeout: 300_000 }, async () => {
  const context = await freshContext('dlq');
  const [task] = await someTasks(1);
  await publishTasks(context.kafka, context.serde, context.names, [task!]);
  const tasksTable = await GlobalTable.load(context.kafka, context.serde, context.names, 'tasks');
  const store = new LocalCheckpointStore(tempDir('checkpoints'));
  const policies = await PolicyTracker.follow(context.kafka, context.serde, context.names, { store });
  const processors = [
    createRolloutWorker(context, { runId: 'it', pool, imageFor, policies, groupSize: 1, maxTurns: 3 }),
    createVerifierProcessor(context, { runId: 'it', pool, imageFor, tasks: tasksTable }),
    createRewardProcessor(context),
    createLearner(context, { runId: 'it', store, batchSize: 100 }),
  ];
  try {
    await Promise.all(processors.map((p) => p.start()));
    const poisoned = {
      tasks: await poison(context, 'tasks'),
      trajectories: await poison(context, 'trajectories'),
      verifications: await poison(context, 'verifications'),
      rewards: await poison(context, 'rewards'),
    };
    // Good records after the poison: the task is published again and must be rolled out, verified and rewarded.
    await publishTasks(context.kafka, context.serde, context.names, [task!]);
    await eventually('a reward for the good task', async () => (await readAll(context, 'rewards', { skipInvalid: true })).length >= 2, 240_000);

    // A dead letter is logged when made and readable once its transaction commits: wait for all 15.
    let letters: DeadLetter[] = [];
    await eventually('every poison record dead-lettered', async () => (letters = await readAll(context, 'deadLetters')).length >= 15, 60_000);
    assertDeadLettered(letters, 'rollout-worker', context.names.name('tasks'), poisoned.tasks);
    assertDeadLettered(letters, 'verifier', context.names.name('trajectories'), poisoned.trajectories);
    assertDeadLettered(letters, 'learner', context.names.name('trajectories'), poisoned.trajectories);
    assertDeadLettered(letters, 'reward', context.names.name('verifications'), poisoned.verifications);
    assertDeadLettered(letters, 'learner', context.names.name('rewards'), poisoned.rewards);
    assert.equal((await readAll(context, 'trajectories', { skipInvalid: true })).length, 2, 'both good tasks were rolled out');
    assert.equal((await readAll(context, 'verifications', { skipInvalid: true })).length, 2);
  } finally {
    await Promise.allSettled(processors.map((p) => p.stop()));
    await Promise.allSettled([tasksTable.close(), policies.close()]);
  }
});

test('a record that breaks a contract is refused at the producer, naming the field', async () => {
  const context = await freshContext('contract');
  const verification = { verificationId: 'v', trajectoryId: 't', groupId: 'g', groupSize: 0 } as unknown as Verification;
  await assert.rejects(context.serde.encode('verifications', verification), /groupSize: Too small/);
});

test('a reward group completes only when all its verifications are in, across a restart', { timeout: 120_000 }, async () => {
  const context = await freshContext('groups');
  const verification = (attempt: number, passed: boolean): Verification => ({
    verificationId: `v${attempt}`, trajectoryId: `t${attempt}`, groupId: 'g1', groupSize: 3, passed,
    tests: [], testsPassed: passed ? 1 : 0, testsTotal: 1, fractionPassed: passed ? 1 : 0, failure: null, durationMs: 1,
    lineage: lineage('task-a', attempt),
  });
  const send = async (v: Verification) => sendRaw(context, 'verifications', [{ key: v.groupId, value: await context.serde.encode('verifications', v) }]);
  let reward = createRewardProcessor(context);
  await reward.start();
  await send(verification(0, true));
  await send(verification(1, false));
  await eventually('two verifications handled', async () => reward.metrics.processed >= 2, 60_000);
  await reward.stop();
  // The partial group survives the restart in the changelog-backed store.
  reward = createRewardProcessor(context);
  await reward.start();
  try {
    await send(verification(2, false));
    await eventually('three rewards', async () => (await readAll(context, 'rewards')).length === 3, 60_000);
    const rewards = await readAll(context, 'rewards');
    assert.deepEqual(rewards.map((r) => r.reward).sort(), [0, 0, 1]);
    assert.ok(Math.abs(rewards.reduce((s, r) => s + r.advantage, 0)) < 1e-6);
  } finally {
    await reward.stop();
  }
});

test('a task row that fails validation goes to the rejects file with its line and reason', async () => {
  const dir = tempDir('rows');
  const bundle = readFileSync(join(repoRoot(), 'tasks', 'repair-bundle.jsonl'), 'utf8').split('\n').filter(Boolean);
  const file = join(dir, 'tasks.jsonl');
  const broken = JSON.parse(bundle[1]!) as Record<string, unknown>;
  delete broken.hidden_tests;
  writeFileSync(file, [bundle[0], JSON.stringify(broken), '{not json', bundle[0], JSON.stringify({ ...JSON.parse(bundle[2]!), module: 'not a module' })].join('\n') + '\n');
  const report = await prepareTasks({ file, rejectsDir: dir, jobRunId: 'job-1' });
  assert.equal(report.tasks.length, 1);
  assert.equal(report.duplicates, 1);
  const rejects = readFileSync(report.rejectsFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { row: number; reason: string });
  assert.deepEqual(rejects.map((r) => r.row), [2, 3, 4, 5]);
  assert.match(rejects[0]!.reason, /hidden_tests/);
  assert.match(rejects[1]!.reason, /not valid JSON/);
  assert.match(rejects[2]!.reason, /duplicate/);
  assert.match(rejects[3]!.reason, /module: must be a Python module file name/);
  await assert.rejects(prepareTasks({ file: join(dir, 'missing.jsonl'), rejectsDir: dir }), /does not exist/);
});

