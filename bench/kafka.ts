/**
 * Kafka client benchmark: `npm run bench:kafka [-- --records 50000 --bytes 1024 --rounds 3 --send-batch 1000]`.
 *
 * Both implementations of the Kafka port (kafkajs, @confluentinc/kafka-javascript), side by side on the same
 * broker, through the port exactly as the processors use it, interleaved (the order alternates per round) so
 * that a change in machine load hits both alike:
 *   1. produce: an idempotent producer sending --records records of --bytes bytes to a 3-partition topic,
 *      --send-batch records per call, one call at a time;
 *   2. consume: a fresh group reading that topic with eachBatch, from the first record handed over to the last;
 *   3. transactional consume-produce: a fresh group reading the topic and, per batch, one transaction with a
 *      copy of every record, the batch's offset (sendOffsets with the consumer) and its commit; records per
 *      second from the first batch to the last commit;
 *   4. the same in transactions of --transaction-records records (StreamProcessor's default is 20), over the
 *      first --small-records records: what a processor's commits cost.
 * Each figure is printed per round, then as min / median / max with the confluent:kafkajs ratio and the load
 * average, and saved to bench/results/kafka.json (confluent as ours, kafkajs as the baseline; `npm run
 * bench:table`). Needs Kafka (`trialrun stack up`); creates and deletes its own topics.
 */
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { createKafka, ensureTopics, KAFKA_CLIENTS, type KafkaClientName, type KafkaPort } from '../connectors/kafka/index.js';
import { benchArgs, BenchReport, median } from './harness.js';

const cli = benchArgs(
  'bench:kafka',
  'npm run bench:kafka [-- --records 50000 --bytes 1024 --rounds 3 --send-batch 1000]',
  {
    records: { type: 'string', default: '50000' },
    bytes: { type: 'string', default: '1024' },
    rounds: { type: 'string', default: '3' },
    'send-batch': { type: 'string', default: '1000' },
    'transaction-records': { type: 'string', default: '20' },
    'small-records': { type: 'string', default: '5000' },
  },
);
const { values } = cli;
const whole = (name: keyof typeof values, min: number): number => cli.int(name, min);
const RECORDS = whole('records', 1000);
const BYTES = whole('bytes', 1);
const ROUNDS = whole('rounds', 3);
const SEND_BATCH = whole('send-batch', 1);
const TRANSACTION_RECORDS = whole('transaction-records', 1);
const SMALL_RECORDS = Math.min(RECORDS, whole('small-records', 1));
const PARTITIONS = 3;
const TRANSACTION_SEND = 500;

type Figure = 'produce' | 'consume' | 'transactional' | 'small-transactions';
const FIGURES: readonly Figure[] = ['produce', 'consume', 'transactional', 'small-transactions'];

const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function withTopic<T>(kafka: KafkaPort, label: string, work: (topic: string) => Promise<T>): Promise<T> {
  const topic = `bench-kafka-${kafka.client}-${label}-${randomUUID().slice(0, 8)}`;
  const admin = kafka.admin();
  await admin.connect();
  try {
    await ensureTopics(admin, [{ topic, partitions: PARTITIONS, config: {} }]);
    return await work(topic);
  } finally {
    await admin.deleteTopics([topic]).catch(() => undefined);
    await admin.disconnect();
  }
}

const payload = Buffer.alloc(BYTES, 'x');

/** Records per second of one producer sending RECORDS records in calls of SEND_BATCH. */
async function produce(kafka: KafkaPort, topic: string): Promise<number> {
  const producer = kafka.producer();
  await producer.connect();
  try {
    const started = performance.now();
    for (let sent = 0; sent < RECORDS; sent += SEND_BATCH) {
      const count = Math.min(SEND_BATCH, RECORDS - sent);
      await producer.send({ topic, messages: Array.from({ length: count }, (_, i) => ({ key: `key-${sent + i}`, value: payload })) });
    }
    return RECORDS / ((performance.now() - started) / 1000);
  } finally {
    await producer.disconnect();
  }
}

/** Records per second read by a fresh group, from the first record handed over to the last. */
async function consume(kafka: KafkaPort, topic: string): Promise<number> {
  const consumer = kafka.consumer({ groupId: `bench-kafka-${randomUUID()}` });
  let seen = 0;
  let first = 0;
  let last = 0;
  await consumer.connect();
  try {
    await consumer.subscribe([topic]);
    const done = new Promise<void>((resolve) => {
      void consumer.run({
        eachBatch: async ({ batch, resolveOffset }) => {
          if (!first) first = performance.now();
          seen += batch.messages.length;
          if (batch.messages.length) resolveOffset(batch.messages[batch.messages.length - 1]!.offset);
          if (seen >= RECORDS && !last) {
            last = performance.now();
            resolve();
          }
        },
      });
    });
    await done;
    return RECORDS / ((last - first) / 1000);
  } finally {
    await consumer.disconnect();
  }
}

/**
 * Records per second through consume -> transaction(copy + sendOffsets) -> commit over the first `records`
 * records, one transaction per `perTransaction` records of a batch (Infinity: per batch).
 */
async function transactional(kafka: KafkaPort, input: string, output: string, records: number, perTransaction: number): Promise<number> {
  const groupId = `bench-kafka-${randomUUID()}`;
  const producer = kafka.producer({ transactionalId: `${groupId}-0` });
  const consumer = kafka.consumer({ groupId });
  await producer.connect();
  await consumer.connect();
  let copied = 0;
  let first = 0;
  let last = 0;
  try {
    await consumer.subscribe([input]);
    const done = new Promise<void>((resolve, reject) => {
      void consumer.run({
        eachBatch: async ({ batch, resolveOffset }) => {
          if (batch.messages.length === 0 || last) return;
          if (!first) first = performance.now();
          for (let start = 0; start < batch.messages.length && !last; start += perTransaction) {
            const chunk = batch.messages.slice(start, start + perTransaction);
            const transaction = await producer.transaction();
            try {
              // In sends of at most TRANSACTION_SEND records: a whole fetch to one partition can pass the broker's message.max.bytes.
              for (let i = 0; i < chunk.length; i += TRANSACTION_SEND) {
                await transaction.send({ topic: output, messages: chunk.slice(i, i + TRANSACTION_SEND).map((m) => ({ key: m.key, value: m.value })) });
              }
              const next = (BigInt(chunk[chunk.length - 1]!.offset) + 1n).toString();
              await transaction.sendOffsets(consumer, [{ topic: input, partition: batch.partition, offset: next }]);
              await transaction.commit();
            } catch (error) {
              await transaction.abort().catch(() => undefined);
              reject(error);
              return;
            }
            resolveOffset(chunk[chunk.length - 1]!.offset);
            copied += chunk.length;
            if (copied >= records) {
              last = performance.now();
              resolve();
            }
          }
        },
      });
    });
    await done;
    return copied / ((last - first) / 1000);
  } finally {
    await consumer.disconnect();
    await producer.disconnect();
  }
}

async function round(kafka: KafkaPort): Promise<Record<Figure, number>> {
  return withTopic(kafka, 'in', async (input) =>
    withTopic(kafka, 'out', async (output) => {
      const produced = await produce(kafka, input);
      const consumed = await consume(kafka, input);
      const copiedPerSecond = await transactional(kafka, input, output, RECORDS, Infinity);
      const small = await transactional(kafka, input, output, SMALL_RECORDS, TRANSACTION_RECORDS);
      return { produce: produced, consume: consumed, transactional: copiedPerSecond, 'small-transactions': small };
    }),
  );
}

async function main(): Promise<void> {
  const report = new BenchReport('kafka', `npm run bench:kafka -- --records ${RECORDS} --bytes ${BYTES} --rounds ${ROUNDS} --send-batch ${SEND_BATCH} --transaction-records ${TRANSACTION_RECORDS} --small-records ${SMALL_RECORDS}`);
  const ports = new Map(KAFKA_CLIENTS.map((client) => [client, createKafka({ client, clientId: `bench-kafka-${client}` })]));
  const results = new Map<KafkaClientName, Record<Figure, number[]>>(KAFKA_CLIENTS.map((client) => [client, { produce: [], consume: [], transactional: [], 'small-transactions': [] }]));
  const loads: number[] = [];
  console.log(`trialrun Kafka client benchmark: ${fmt(RECORDS)} records of ${fmt(BYTES)} bytes, ${PARTITIONS} partitions, ${SEND_BATCH} records per send, transactions per batch and of ${TRANSACTION_RECORDS} records (over ${fmt(SMALL_RECORDS)}), ${ROUNDS} interleaved rounds (${new Date().toISOString()})\n`);
  // A warm-up of each client, not counted: connections, metadata, the JIT.
  for (const port of ports.values()) await round(port);
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate which client goes first, so neither always gets the quieter moment.
    const order = r % 2 === 0 ? KAFKA_CLIENTS : [...KAFKA_CLIENTS].reverse();
    for (const client of order) {
      const figures = await round(ports.get(client)!);
      const load = loadavg()[0]!;
      loads.push(load);
      for (const figure of FIGURES) results.get(client)![figure].push(figures[figure]);
      console.log(`round ${r + 1} ${client.padEnd(9)} produce ${fmt(figures.produce).padStart(8)}/s  consume ${fmt(figures.consume).padStart(8)}/s  transactional ${fmt(figures.transactional).padStart(8)}/s  ${TRANSACTION_RECORDS}-record transactions ${fmt(figures['small-transactions']).padStart(7)}/s  (load ${fmt(load, 2)})`);
    }
  }
  console.log('\n| figure (records/s) | kafkajs median (min to max) | confluent median (min to max) | confluent:kafkajs (medians) |');
  console.log('| --- | --- | --- | --- |');
  for (const figure of FIGURES) {
    const cell = (client: KafkaClientName): string => {
      const xs = results.get(client)![figure];
      return `${fmt(median(xs))} (${fmt(Math.min(...xs))} to ${fmt(Math.max(...xs))})`;
    };
    const ratio = median(results.get('confluent')![figure]) / median(results.get('kafkajs')![figure]);
    console.log(`| ${figure} | ${cell('kafkajs')} | ${cell('confluent')} | ${fmt(ratio, 2)} |`);
  }
  console.log(`\nload average (1 min) over the rounds: ${fmt(Math.min(...loads), 2)} to ${fmt(Math.max(...loads), 2)}; now ${loadavg().map((l) => fmt(l, 2)).join(' ')}`);
  for (const figure of FIGURES) {
    report.compare({
      metric: `${figure}, ${fmt(figure === 'small-transactions' ? SMALL_RECORDS : RECORDS)} records of ${fmt(BYTES)} bytes${figure === 'small-transactions' ? ` in ${TRANSACTION_RECORDS}-record transactions` : ''}`,
      unit: 'records/s',
      ours: results.get('confluent')![figure],
      baseline: results.get('kafkajs')![figure],
      baselineName: 'the kafkajs client',
      higherIsBetter: true,
    });
  }
  report.save();
}

await main();
