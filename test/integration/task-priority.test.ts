import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, it } from 'node:test';
import { prepareTasks } from '../../pipelines/jobs/task-job/index.js';
import { StreamProcessor } from '../../pipelines/runtime/index.js';
import { nowIso, type Task } from '../../schemas/index.js';
import { repoRoot } from '../../cli/paths.js';
import { committedPastEnd, ensureStack, eventually, freshContext, readAll, tempDir } from './harness.js';

before(ensureStack, { timeout: 900_000 });

it('a priority-ordered processor (as the rollout worker runs) commits higher priorities first, each record once across a restart', { timeout: 180_000 }, async () => {
  const context = await freshContext('task-priority');
  const prepared = await prepareTasks({ file: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'), rejectsDir: tempDir('task-priority') });
  // Offsets 0..11 of one partition; priority rises with the offset, so priority order reverses offset order.
  const tasks: Task[] = prepared.tasks.slice(0, 12).map((task, i) => ({ ...task, priority: Math.floor(i / 4) }));
  const producer = context.kafka.producer();
  await producer.connect();
  await producer.send({
    topic: context.names.name('tasks'),
    messages: await Promise.all(tasks.map(async (task) => ({ key: task.taskId, value: await context.serde.encode('tasks', task), partition: 0 }))),
  });
  await producer.disconnect();

  // Each handled record emits one output in its transaction; the output topic (one partition) shows what
  // was committed, in commit order. The first instance blocks on its fifth record until it is stopped.
  let calls = 0;
  let blocked = false;
  const processor = (instance: number): StreamProcessor<'tasks'> =>
    new StreamProcessor(context, { name: 'priority-probe', inputs: ['tasks'], maxRecordsPerTransaction: 1, priority: (task) => task.priority }, async ({ record, signal }) => {
      if (instance === 0 && ++calls === 5) {
        blocked = true;
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
        signal.throwIfAborted();
      }
      return [
        {
          topic: 'deadLetters',
          key: record.value.taskId,
          value: {
            processor: `instance-${instance}`, sourceTopic: record.topic, partition: record.partition, offset: record.offset, key: record.key, value: null, headers: {},
            error: { name: 'Probe', message: `priority ${record.value.priority}`, retriable: false, stage: 'handle' }, attempts: 1, failedAt: nowIso(),
          },
        },
      ];
    });

  const first = processor(0);
  await first.start();
  await eventually('the first instance to block on its fifth record', async () => blocked, 60_000);
  await first.stop();
  const second = processor(1);
  await second.start();
  try {
    await eventually('every task to be committed', async () => (await readAll(context, 'deadLetters')).length >= tasks.length, 60_000);
    // Past every task, no further (or duplicate) output can appear.
    await eventually('the second instance to commit past every task', () => committedPastEnd(context, `${context.names.prefix}priority-probe`, 'tasks'), 60_000);
  } finally {
    await second.stop();
  }

  const committed = await readAll(context, 'deadLetters');
  const priorityOf = new Map(tasks.map((task) => [task.taskId, task.priority]));
  assert.deepEqual(committed.map((letter) => letter.key).sort(), tasks.map((task) => task.taskId).sort(), 'every record committed exactly once');
  assert.deepEqual(committed.map((letter) => priorityOf.get(letter.key!)), [2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0], 'highest priority first');
  const byFirst = committed.filter((letter) => letter.processor === 'instance-0');
  assert.ok(byFirst.length >= 3, `the first instance committed ${byFirst.length} records (out of offset order) before it stopped`);
  // Within a priority, offset order.
  assert.deepEqual(committed.slice(4, 8).map((letter) => Number(letter.offset)), [4, 5, 6, 7]);
});

it('an instance started while another works through a backlog of slow records gets partitions once that one hands its batch back', { timeout: 180_000 }, async () => {
  const context = await freshContext('task-yield');
  const prepared = await prepareTasks({ file: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'), rejectsDir: tempDir('task-yield') });
  // Six slow tasks in each of two partitions: the client hands each partition's backlog over as one batch.
  const tasks = prepared.tasks.slice(0, 12);
  const producer = context.kafka.producer();
  await producer.connect();
  await producer.send({
    topic: context.names.name('tasks'),
    messages: await Promise.all(tasks.map(async (task, i) => ({ key: task.taskId, value: await context.serde.encode('tasks', task), partition: i % 2 }))),
  });
  await producer.disconnect();

  const handledBy: number[] = [];
  const processor = (instance: number): StreamProcessor<'tasks'> =>
    new StreamProcessor(context, { name: 'yield-probe', inputs: ['tasks'], maxRecordsPerTransaction: 1, priority: (task) => task.priority, yieldBatchAfterMs: 1_000 }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      handledBy.push(instance);
      return [];
    });
  const first = processor(0);
  await first.start();
  await eventually('the first instance to handle a record', async () => handledBy.length > 0, 60_000);
  const second = processor(1);
  await second.start();
  try {
    await eventually('the second instance to handle a record', async () => handledBy.includes(1), 60_000);
    const firstBefore = handledBy.indexOf(1);
    // Without handing batches back, the first instance would hold its six-record batch (12 s) before the group could rebalance.
    assert.ok(firstBefore < 6, `the second instance started handling after ${firstBefore} records of the first`);
    await eventually('every task to be handled', async () => handledBy.length >= tasks.length, 120_000);
  } finally {
    await Promise.all([first.stop(), second.stop()]);
  }
});
