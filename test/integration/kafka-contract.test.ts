/**
 * One contract, both clients: every behaviour the processors rely on, run against kafkajs and against
 * @confluentinc/kafka-javascript (librdkafka) on the real broker, each test on topics and groups of its own.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import {
  createKafka,
  ensureTopics,
  groupLag,
  inTransaction,
  KAFKA_CLIENTS,
  readRange,
  readTopic,
  type IncomingMessage,
  type KafkaClientName,
  type KafkaConsumer,
  type KafkaPort,
} from '../../connectors/kafka/index.js';
import { KafkaError } from '../../schemas/index.js';
import { ensureStack, eventually } from './harness.js';

before(ensureStack, { timeout: 900_000 });

const created: Array<{ kafka: KafkaPort; topic: string }> = [];

/** A fresh topic of this test run, deleted at the end (only the topics this file created). */
async function freshTopic(kafka: KafkaPort, partitions: number, config: Record<string, string> = {}): Promise<string> {
  const topic = `it-contract-${kafka.client}-${randomUUID().slice(0, 8)}`;
  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, [{ topic, partitions, config }]).finally(() => admin.disconnect());
  created.push({ kafka, topic });
  return topic;
}

after(async () => {
  for (const client of KAFKA_CLIENTS) {
    const mine = created.filter((entry) => entry.kafka.client === client);
    if (mine.length === 0) continue;
    const admin = mine[0]!.kafka.admin();
    await admin.connect();
    await admin.deleteTopics(mine.map((entry) => entry.topic)).catch(() => undefined);
    await admin.disconnect();
  }
});

const freshGroup = (label: string): string => `it-contract-${label}-${randomUUID().slice(0, 8)}`;

/** Consumes `topic` with `consumer` until `count` records arrived (resolving each), then leaves running. */
async function consumeUntil(consumer: KafkaConsumer, topic: string, count: number, seen: Array<IncomingMessage & { partition: number }> = []): Promise<typeof seen> {
  await consumer.connect();
  await consumer.subscribe([topic]);
  await consumer.run({
    eachBatch: async ({ batch, resolveOffset }) => {
      for (const message of batch.messages) {
        seen.push({ ...message, partition: batch.partition });
        resolveOffset(message.offset);
      }
    },
  });
  await eventually(`${count} records from ${topic}`, async () => seen.length >= count, 60_000, 50);
  return seen;
}

async function committedValues(kafka: KafkaPort, topic: string): Promise<string[]> {
  const values: string[] = [];
  await readTopic(kafka, { topic, onRecord: ({ value }) => void values.push(value?.toString() ?? '') });
  return values.sort();
}

function contract(client: KafkaClientName): void {
  const kafka = createKafka({ client, clientId: `it-contract-${client}` });

  test('produces keyed records with headers and consumes every one; a key always lands in the partition the other client picks', { timeout: 120_000 }, async () => {
    const topic = await freshTopic(kafka, 3);
    const producer = kafka.producer();
    await producer.connect();
    const messages = Array.from({ length: 30 }, (_, i) => ({ key: `key-${i % 7}`, value: `value-${i}`, headers: { origin: `o-${i}` } }));
    await producer.send({ topic, messages: messages.slice(0, 10) });
    await producer.sendBatch([{ topic, messages: messages.slice(10) }]);
    await producer.disconnect();

    const consumer = kafka.consumer({ groupId: freshGroup('plain') });
    const seen = await consumeUntil(consumer, topic, 30);
    await consumer.disconnect();
    assert.deepEqual(seen.map((m) => m.value!.toString()).sort(), messages.map((m) => m.value).sort());
    for (const message of seen) assert.equal(message.headers.origin, `o-${message.value!.toString().slice('value-'.length)}`);
    const partitionOf = new Map<string, number>();
    for (const message of seen) {
      const key = message.key!.toString();
      assert.equal(partitionOf.get(key) ?? message.partition, message.partition, `key ${key} stays in one partition`);
      partitionOf.set(key, message.partition);
    }

    // Compacted topics rely on it: a key's partition must not depend on which client wrote it.
    const other = createKafka({ client: client === 'kafkajs' ? 'confluent' : 'kafkajs', clientId: 'it-contract-other' });
    const otherProducer = other.producer();
    await otherProducer.connect();
    await otherProducer.send({ topic, messages: [...partitionOf.keys()].map((key) => ({ key, value: `other-${key}` })) });
    await otherProducer.disconnect();
    const placed = new Map<string, number>();
    await readRange(kafka, { topic, from: { offset: 0n }, groupId: freshGroup('placed'), onRecord: (record) => void (record.value?.toString().startsWith('other-') && placed.set(record.key!, record.partition)) });
    assert.deepEqual(new Map([...placed].sort()), new Map([...partitionOf].sort()));
  });

  test('a committed transaction is visible to read_committed readers, an aborted one only to read_uncommitted ones', { timeout: 120_000 }, async () => {
    const topic = await freshTopic(kafka, 1);
    const transactionalId = `it-contract-tx-${randomUUID()}`;
    await inTransaction(kafka, transactionalId, (transaction) => transaction.send({ topic, messages: [{ key: 'k', value: 'committed-1' }, { key: 'k', value: 'committed-2' }] }));
    await assert.rejects(
      inTransaction(kafka, transactionalId, async (transaction) => {
        await transaction.send({ topic, messages: [{ key: 'k', value: 'aborted' }] });
        throw new Error('changed my mind');
      }),
      /changed my mind/,
    );
    await inTransaction(kafka, transactionalId, (transaction) => transaction.sendBatch([{ topic, messages: [{ key: 'k', value: 'committed-3' }] }]));

    assert.deepEqual(await committedValues(kafka, topic), ['committed-1', 'committed-2', 'committed-3'], 'readTopic ends past the final commit marker');
    const reader = kafka.consumer({ groupId: freshGroup('uncommitted'), readUncommitted: true });
    const uncommitted = await consumeUntil(reader, topic, 4).finally(() => reader.disconnect());
    assert.deepEqual(uncommitted.map((m) => m.value!.toString()).sort(), ['aborted', 'committed-1', 'committed-2', 'committed-3']);
  });

  test('consume-transform-produce: sendOffsets commits the offset and its metadata with the outputs, once', { timeout: 120_000 }, async () => {
    const input = await freshTopic(kafka, 1);
    const output = await freshTopic(kafka, 1);
    const plain = kafka.producer();
    await plain.connect();
    await plain.send({ topic: input, messages: ['a', 'b', 'c'].map((value) => ({ key: 'k', value })) });
    await plain.disconnect();

    const groupId = freshGroup('eos');
    const producer = kafka.producer({ transactionalId: `${groupId}-0` });
    await producer.connect();
    const consumer = kafka.consumer({ groupId });
    let transformed = 0;
    await consumer.connect();
    await consumer.subscribe([input]);
    await consumer.run({
      eachBatch: async ({ batch, resolveOffset }) => {
        for (const message of batch.messages) {
          const transaction = await producer.transaction();
          await transaction.send({ topic: output, messages: [{ key: 'k', value: message.value!.toString().toUpperCase() }] });
          await transaction.sendOffsets(consumer, [{ topic: input, partition: batch.partition, offset: (BigInt(message.offset) + 1n).toString(), metadata: `done-through-${message.offset}` }]);
          await transaction.commit();
          resolveOffset(message.offset);
          transformed++;
        }
      },
    });
    await eventually('three transformed records', async () => transformed >= 3, 60_000, 50);
    await consumer.disconnect();
    await producer.disconnect();

    assert.deepEqual(await committedValues(kafka, output), ['A', 'B', 'C']);
    const admin = kafka.admin();
    await admin.connect();
    try {
      const [offsets] = await admin.fetchGroupOffsets(groupId, [input]);
      assert.deepEqual(offsets?.partitions, [{ partition: 0, offset: '3', metadata: 'done-through-2' }]);
      assert.deepEqual(await groupLag(admin, groupId, input), { total: 0, partitions: [{ partition: 0, lag: 0 }] });
    } finally {
      await admin.disconnect();
    }
  });

  test('range reads by offset and time end at the range, past transaction markers, and resume under their group', { timeout: 120_000 }, async () => {
    const topic = await freshTopic(kafka, 2);
    const transactionalId = `it-contract-range-${randomUUID()}`;
    const write = (values: string[]) => inTransaction(kafka, transactionalId, (transaction) => transaction.send({ topic, messages: values.map((value, i) => ({ key: `k${i}`, value })) }));
    await write(['early-0', 'early-1', 'early-2', 'early-3']);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const boundary = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 50));
    await write(['late-0', 'late-1']);

    const read = async (from: Parameters<typeof readRange>[1]['from'], to: Parameters<typeof readRange>[1]['to'], groupId = freshGroup('range')) => {
      const values: string[] = [];
      const progress: Array<[number, number]> = [];
      const report = await readRange(kafka, { topic, from, to, groupId, onRecord: ({ value }) => void values.push(value!.toString()), onProgress: (done, total) => void progress.push([done, total]) });
      return { values: values.sort(), report, progress };
    };
    assert.deepEqual((await read({ timestamp: boundary }, 'latest')).values, ['late-0', 'late-1']);
    assert.deepEqual((await read('earliest', { timestamp: boundary })).values, ['early-0', 'early-1', 'early-2', 'early-3']);
    const group = freshGroup('range-resume');
    const all = await read('earliest', 'latest', group);
    assert.equal(all.values.length, 6);
    assert.deepEqual(all.progress.at(-1), [6, 6], 'markers come off the count: the read ends at 100%');
    assert.deepEqual((await read('earliest', 'latest', group)).values, [], 'the same range under the same group hands nothing over twice');
  });

  test('admin: topics, their settings and offsets, group offsets set and deleted', { timeout: 120_000 }, async () => {
    const topic = await freshTopic(kafka, 3, { 'cleanup.policy': 'compact' });
    const admin = kafka.admin();
    await admin.connect();
    try {
      assert.deepEqual(await ensureTopics(admin, [{ topic, partitions: 3, config: {} }]), [], 'ensureTopics is idempotent');
      assert.ok((await admin.listTopics()).includes(topic));
      assert.deepEqual(await admin.describeTopic(topic, ['cleanup.policy']), { partitions: 3, config: { 'cleanup.policy': 'compact' } });
      const producer = kafka.producer();
      await producer.connect();
      await producer.send({ topic, messages: [0, 1, 2].map((partition) => ({ key: 'k', value: 'v', partition })) });
      await producer.disconnect();
      const offsets = (await admin.fetchTopicOffsets(topic)).sort((a, b) => a.partition - b.partition);
      assert.deepEqual(offsets, [0, 1, 2].map((partition) => ({ partition, low: '0', high: '1' })));
      const future = await admin.fetchTopicOffsetsByTimestamp(topic, Date.now() + 3_600_000);
      assert.deepEqual(future.map((p) => p.offset), ['1', '1', '1'], 'no record at or after a future time: the end');

      const groupId = freshGroup('admin');
      await admin.setGroupOffsets(groupId, [0, 1, 2].map((partition) => ({ topic, partition, offset: '1' })));
      const [committed] = await admin.fetchGroupOffsets(groupId, [topic]);
      assert.deepEqual(committed?.partitions.map((p) => p.offset).sort(), ['1', '1', '1']);
      assert.equal((await groupLag(admin, groupId, topic)).total, 0);
      await admin.deleteGroups([groupId]);
      const [gone] = await admin.fetchGroupOffsets(groupId, [topic]);
      assert.ok((gone?.partitions ?? []).every((p) => p.offset === '-1'), 'a deleted group has committed nothing');
      assert.deepEqual(await admin.fetchGroupOffsets(groupId, [`${topic}-missing`]), [], 'a missing topic holds no offsets');
    } finally {
      await admin.disconnect();
    }
  });

  test('rebalance: a second member takes over partitions, reported by onAssignment, and nothing is lost when the first leaves', { timeout: 180_000 }, async () => {
    const topic = await freshTopic(kafka, 3);
    const groupId = freshGroup('rebalance');
    const producer = kafka.producer();
    await producer.connect();
    const send = (from: number, count: number) => producer.send({ topic, messages: Array.from({ length: count }, (_, i) => ({ key: `k${from + i}`, value: String(from + i) })) });
    await send(0, 30);

    const assignments: Array<Array<{ topic: string; partition: number }>> = [];
    const seen = new Set<string>();
    const member = (name: string): KafkaConsumer =>
      kafka.consumer({ groupId, sessionTimeoutMs: 6_000, heartbeatIntervalMs: 1_000, onAssignment: (assignment) => void assignments.push([...assignment].map((p) => ({ ...p, name }))) });
    const first = member('first');
    const commitEach = (consumer: KafkaConsumer) => async ({ batch, resolveOffset }: Parameters<Parameters<KafkaConsumer['run']>[0]['eachBatch']>[0]) => {
      for (const message of batch.messages) {
        seen.add(message.value!.toString());
        resolveOffset(message.offset);
      }
      if (batch.messages.length) await consumer.commitOffsets([{ topic, partition: batch.partition, offset: (BigInt(batch.messages.at(-1)!.offset) + 1n).toString() }]);
    };
    await first.connect();
    await first.subscribe([topic]);
    await first.run({ eachBatch: commitEach(first) });
    await eventually('the first member read everything', async () => seen.size >= 30, 60_000, 50);
    assert.equal(assignments.at(-1)?.length, 3, 'alone, the first member has every partition');

    const second = member('second');
    await second.connect();
    await second.subscribe([topic]);
    await second.run({ eachBatch: commitEach(second) });
    await eventually('a rebalance that splits the partitions', async () => assignments.some((a) => a.length > 0 && a.length < 3), 60_000, 50);
    await send(30, 30);
    await eventually('the records sent after the rebalance', async () => seen.size >= 60, 60_000, 50);

    await first.disconnect();
    await send(60, 30);
    await eventually('the second member alone reads the rest', async () => seen.size >= 90, 90_000, 50);
    await second.disconnect();
    await producer.disconnect();
    assert.deepEqual([...seen].map(Number).sort((a, b) => a - b), Array.from({ length: 90 }, (_, i) => i));
  });

  test('a transactional producer the broker refuses fails, not retriable, at connect or at its first transaction, and leaves no client thread running', { timeout: 120_000 }, async () => {
    // Each client's threads (librdkafka's per handle) show in the process's task list; node's own are there already.
    const threads = (): number => readdirSync('/proc/self/task').length;
    const before = threads();
    for (let i = 0; i < 3; i++) {
      // A transaction timeout past the broker's transaction.max.timeout.ms (15 minutes): InitProducerId is refused.
      const producer = kafka.producer({ transactionalId: freshGroup('refused'), transactionTimeoutMs: 3_600_000 });
      let connected = false;
      const refused = await producer
        .connect()
        .then(() => ((connected = true), producer.transaction()))
        .then(
          () => null,
          (error: unknown) => error,
        );
      assert.ok(refused instanceof KafkaError && !refused.retriable, `refused, not retriable: ${String(refused)}`);
      // The caller disconnects what it holds; a producer whose connect failed it never got, so the client must not leave it running.
      if (connected) await producer.disconnect();
    }
    await eventually('no client thread left running', async () => threads() <= before, 30_000, 100);
  });

  if (client === 'confluent') {
    test('KIP-447: a member that lost its generation (stuck past its poll interval) cannot commit offsets in a transaction', { timeout: 180_000 }, async () => {
      const input = await freshTopic(kafka, 1);
      const output = await freshTopic(kafka, 1);
      const plain = kafka.producer();
      await plain.connect();
      await plain.send({ topic: input, messages: [{ key: 'k', value: 'only' }] });
      await plain.disconnect();

      const groupId = freshGroup('zombie');
      const producer = kafka.producer({ transactionalId: `${groupId}-${randomUUID()}` });
      await producer.connect();
      const zombie = kafka.consumer({ groupId, sessionTimeoutMs: 6_000, heartbeatIntervalMs: 1_000, maxPollIntervalMs: 6_000 });
      let outcome: unknown;
      await zombie.connect();
      await zombie.subscribe([input]);
      await zombie.run({
        eachBatch: async ({ batch }) => {
          if (outcome !== undefined) return;
          const transaction = await producer.transaction();
          await transaction.send({ topic: output, messages: [{ key: 'k', value: 'from-the-zombie' }] });
          // Stuck well past the poll interval (the client's KafkaJS layer allows twice it): it leaves the group.
          await new Promise((resolve) => setTimeout(resolve, 20_000));
          try {
            await transaction.sendOffsets(zombie, [{ topic: input, partition: batch.partition, offset: '1' }]);
            await transaction.commit();
            outcome = 'committed';
          } catch (error) {
            outcome = error;
            await transaction.abort().catch(() => undefined);
          }
        },
      });
      await eventually('the zombie tried to commit', async () => outcome !== undefined, 90_000, 100);
      await zombie.disconnect();
      await producer.disconnect();
      assert.ok(outcome instanceof KafkaError, `the commit was refused, got ${String(outcome)}`);
      assert.deepEqual(await committedValues(kafka, output), [], 'nothing of the zombie is visible');
    });
  }
}

for (const client of KAFKA_CLIENTS) describe(`Kafka port contract: ${client}`, { concurrency: false }, () => contract(client));
