import assert from 'node:assert/strict';
import { test } from 'node:test';
import { recordBytes, type KafkaAdmin } from '../../connectors/kafka/index.js';
import { isRetriable, RecordTooLargeError } from '../../schemas/index.js';
import { RecordLimits } from './record-limits.js';

/** An admin that answers describeTopic with `limits` (max.message.bytes per topic), counting the reads. */
function adminWith(limits: Record<string, string>): { admin: KafkaAdmin; reads: () => number } {
  let reads = 0;
  const admin = {
    describeTopic: async (topic: string, names: readonly string[]) => {
      reads++;
      assert.deepEqual(names, ['max.message.bytes']);
      return { partitions: 1, config: { 'max.message.bytes': limits[topic]! } };
    },
  } as unknown as KafkaAdmin;
  return { admin, reads: () => reads };
}

const record = (topic: string, bytes: number) => ({ topic, key: 'k', value: Buffer.alloc(bytes) });

test("a topic's limit is read from the broker once, capped by the client's own (librdkafka's 1000000 bytes)", async () => {
  const { admin, reads } = adminWith({ small: '2000', big: '8000000' });
  const kafkajs = new RecordLimits(async () => admin, 'kafkajs');
  assert.equal(await kafkajs.limitOf('small'), 2000);
  assert.equal(await kafkajs.limitOf('small'), 2000);
  assert.equal(await kafkajs.limitOf('big'), 8_000_000);
  assert.equal(reads(), 2);
  assert.equal(await new RecordLimits(async () => admin, 'confluent').limitOf('big'), 1_000_000);
});

test('a record above its topic\'s limit, or (kafkajs) records that add up above it in one transaction, are a RecordTooLargeError naming the topic and sizes', async () => {
  const { admin } = adminWith({ small: '2000' });
  const limits = new RecordLimits(async () => admin, 'kafkajs');
  await limits.check([record('small', 1000), record('small', 1000)], 'x wrote', false);
  const alone = await limits.check([record('small', 2000)], 'x wrote', false).then(() => null, (error: unknown) => error);
  assert.ok(alone instanceof RecordTooLargeError && !isRetriable(alone) && alone.topic === 'small' && alone.limit === 2000);
  assert.equal(alone.bytes, recordBytes(record('small', 2000)));
  assert.match(alone.message, /x wrote a record of \d+ bytes to small, above the 2000 bytes/);
  const together = await limits.check([record('small', 1000), record('small', 1000)], 'x wrote', true).then(() => null, (error: unknown) => error);
  assert.ok(together instanceof RecordTooLargeError && /2 records of \d+ bytes in all to small/.test(together.message));
  // librdkafka splits batches to fit: only a record on its own counts.
  await new RecordLimits(async () => admin, 'confluent').check([record('small', 1000), record('small', 1000)], 'x wrote', true);
});

test('recordBytes bounds what the broker counts: batch header, varints, key, value and headers', () => {
  assert.equal(recordBytes({ key: null, value: null }), 97);
  assert.equal(recordBytes({ key: 'ab', value: Buffer.alloc(10), headers: { h: 'xyz' } }), 97 + 2 + 10 + 10 + 1 + 3);
});

test("a limit that cannot be read (the broker away) lets the records through and is read again next time: never the record's fault", async () => {
  let fail = true;
  const admin = {
    describeTopic: async () => {
      if (fail) throw new Error('broker away');
      return { partitions: 1, config: { 'max.message.bytes': '2000' } };
    },
  } as unknown as KafkaAdmin;
  const limits = new RecordLimits(async () => admin, 'kafkajs');
  await limits.check([record('small', 5000)], 'x wrote', true);
  fail = false;
  await assert.rejects(limits.check([record('small', 5000)], 'x wrote', true), RecordTooLargeError);
});
