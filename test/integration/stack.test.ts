/**
 * Integration tests for the local stack: Kafka (via kafkajs) and the schema registry (via
 * @kafkajs/confluent-schema-registry and its REST API). `before` brings both up, so this file also
 * works on its own: `node --test dist/test/integration/stack.test.js`.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Kafka, Partitioners, logLevel, type Consumer, type Producer } from 'kafkajs';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { kafkaComponent } from '../../stack/kafka.js';
import { registryComponent } from '../../stack/registry.js';

const log = (message: string): void => console.log(`# stack: ${message}`);
const kafkaPart = kafkaComponent();
const registryPart = registryComponent();
const kafka = new Kafka({ clientId: 'trialrun-stack-test', brokers: kafkaPart.endpoint().split(','), logLevel: logLevel.WARN });
const admin = kafka.admin();
const topics: string[] = [];
const subjects: string[] = [];

/** A fresh topic (one partition) per test, so reruns and parallel runs never share data. */
async function newTopic(label: string): Promise<string> {
  const topic = `it-${label}-${randomUUID()}`;
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
  topics.push(topic);
  return topic;
}

function newProducer(options: { transactionalId?: string } = {}): Producer {
  return kafka.producer({
    createPartitioner: Partitioners.DefaultPartitioner,
    ...(options.transactionalId
      ? { transactionalId: options.transactionalId, idempotent: true, maxInFlightRequests: 1 }
      : {}),
  });
}

/** Reads `topic` from the start with a new group until `count` values arrived. */
async function readValues(topic: string, count: number, options: { readUncommitted?: boolean } = {}): Promise<string[]> {
  const consumer = kafka.consumer({ groupId: `it-reader-${randomUUID()}`, readUncommitted: options.readUncommitted ?? false });
  const values: string[] = [];
  try {
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolveAll, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${values.length} of ${count} records from ${topic}`)), 30_000);
      consumer
        .run({
          eachMessage: async ({ message }) => {
            values.push(message.value?.toString() ?? '');
            if (values.length >= count) {
              clearTimeout(timer);
              resolveAll();
            }
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return values;
}

before(
  async () => {
    await kafkaPart.ensure(log);
    await registryPart.ensure(log);
    await admin.connect();
  },
  { timeout: 600_000 },
);

after(async () => {
  if (topics.length > 0) await admin.deleteTopics({ topics }).catch(() => undefined);
  await admin.disconnect();
  for (const subject of subjects) {
    // Soft delete first: the registry refuses a permanent delete of a live subject.
    await fetch(`${registryPart.endpoint()}/subjects/${subject}`, { method: 'DELETE' }).catch(() => undefined);
    await fetch(`${registryPart.endpoint()}/subjects/${subject}?permanent=true`, { method: 'DELETE' }).catch(() => undefined);
  }
});

test('kafkajs produces and consumes a round trip', { timeout: 60_000 }, async () => {
  const topic = await newTopic('roundtrip');
  const producer = newProducer();
  await producer.connect();
  try {
    await producer.send({ topic, messages: ['a', 'b', 'c'].map((value) => ({ key: 'k', value })) });
  } finally {
    await producer.disconnect();
  }
  assert.deepEqual(await readValues(topic, 3), ['a', 'b', 'c']);
});

test('kafkajs consume-transform-produce is exactly-once with transaction.sendOffsets', { timeout: 90_000 }, async () => {
  const input = await newTopic('tx-in');
  const output = await newTopic('tx-out');
  const groupId = `it-tx-${randomUUID()}`;
  const plain = newProducer();
  const transactional = newProducer({ transactionalId: `it-tx-${randomUUID()}` });
  const consumer: Consumer = kafka.consumer({ groupId, readUncommitted: false });
  try {
    await plain.connect();
    await plain.send({ topic: input, messages: [{ value: 'one' }, { value: 'two' }] });
    await transactional.connect();

    // Aborted first: a read_committed reader that reaches the later committed records has provably
    // stepped over these.
    const aborted = await transactional.transaction();
    await aborted.send({ topic: output, messages: [{ value: 'ABORTED' }] });
    await aborted.abort();

    await consumer.connect();
    await consumer.subscribe({ topic: input, fromBeginning: true });
    let processed = 0;
    await new Promise<void>((resolveAll, reject) => {
      const timer = setTimeout(() => reject(new Error(`processed only ${processed} of 2 input records`)), 30_000);
      consumer
        .run({
          autoCommit: false,
          eachMessage: async ({ topic, partition, message }) => {
            const tx = await transactional.transaction();
            try {
              await tx.send({ topic: output, messages: [{ value: (message.value?.toString() ?? '').toUpperCase() }] });
              // The consumed position is committed inside the transaction, atomically with the output.
              await tx.sendOffsets({
                consumerGroupId: groupId,
                topics: [{ topic, partitions: [{ partition, offset: (BigInt(message.offset) + 1n).toString() }] }],
              });
              await tx.commit();
            } catch (err) {
              await tx.abort();
              throw err;
            }
            processed += 1;
            if (processed === 2) {
              clearTimeout(timer);
              resolveAll();
            }
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
    await transactional.disconnect();
    await plain.disconnect();
  }

  assert.deepEqual(await readValues(output, 2), ['ONE', 'TWO']);
  // read_uncommitted sees the aborted record too, which shows it was really written and then filtered.
  assert.deepEqual(await readValues(output, 3, { readUncommitted: true }), ['ABORTED', 'ONE', 'TWO']);
  const [offsets] = await admin.fetchOffsets({ groupId, topics: [input] });
  assert.deepEqual(offsets?.partitions, [{ partition: 0, offset: '2', metadata: null }]);
});

test('schema registry: JSON schema round trip and BACKWARD compatibility', { timeout: 60_000 }, async () => {
  const url = registryPart.endpoint();
  const subject = `${await newTopic('schema')}-value`;
  subjects.push(subject);
  const registry = new SchemaRegistry({ host: url });
  const v1 = {
    $schema: 'http://json-schema.org/draft-07/schema#',
    type: 'object',
    properties: { taskId: { type: 'string' }, reward: { type: 'number' } },
    required: ['taskId', 'reward'],
    additionalProperties: false,
  };
  const { id } = await registry.register({ type: SchemaType.JSON, schema: JSON.stringify(v1) }, { subject });
  const record = { taskId: 't-1', reward: 0.5 };
  const encoded = await registry.encode(id, record);
  assert.equal(encoded.readUInt8(0), 0, 'Confluent wire format: magic byte');
  assert.equal(encoded.readInt32BE(1), id, 'Confluent wire format: schema id');
  assert.deepEqual(await registry.decode(encoded), record);
  await assert.rejects(registry.encode(id, { taskId: 't-1' }), 'a record missing a required field is refused');

  const res = await fetch(`${url}/config/${subject}`, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/vnd.schemaregistry.v1+json' },
    body: JSON.stringify({ compatibility: 'BACKWARD' }),
  });
  assert.equal(res.status, 200);
  assert.equal(((await res.json()) as { compatibility?: string }).compatibility, 'BACKWARD');

  // A new required field breaks readers of old data: BACKWARD must refuse it...
  const breaking = { ...v1, properties: { ...v1.properties, episode: { type: 'integer' } }, required: [...v1.required, 'episode'] };
  await assert.rejects(registry.register({ type: SchemaType.JSON, schema: JSON.stringify(breaking) }, { subject }), /Incompatible artifact: .*new required property/);
  // ...while the same field as optional is backward compatible and becomes version 2.
  const compatible = { ...v1, properties: breaking.properties };
  const v2 = await registry.register({ type: SchemaType.JSON, schema: JSON.stringify(compatible) }, { subject });
  assert.notEqual(v2.id, id);
});

test('ensure() reports reused when the stack is already up', { timeout: 30_000 }, async () => {
  assert.equal(await kafkaPart.ensure(log), 'reused');
  assert.equal(await registryPart.ensure(log), 'reused');
  assert.equal(await kafkaPart.isUp(), true);
  assert.equal(await registryPart.isUp(), true);
});
