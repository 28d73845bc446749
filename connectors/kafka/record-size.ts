import type { KafkaAdmin, KafkaClientName } from './port.js';

/**
 * The bytes one record adds to what the broker checks against a topic's max.message.bytes, at most: the record
 * batch's header (61 bytes, counted once per record so that a lone record is covered), the record's own varints
 * (length, attributes, timestamp and offset deltas, key and value lengths, header count: 36 bytes at most), and per
 * header its two length varints. Compression is off, so the bytes sent are these.
 */
const BATCH_HEADER_BYTES = 61;
const RECORD_FIELDS_BYTES = 36;
const HEADER_FIELDS_BYTES = 10;

/** What a record of `key`, `value` and `headers` costs against the broker's limit, as an upper bound. */
export function recordBytes(record: { readonly key?: Buffer | string | null; readonly value: Buffer | string | null; readonly headers?: Readonly<Record<string, string | Buffer>> }): number {
  const size = (part: Buffer | string | null | undefined): number => (part === null || part === undefined ? 0 : typeof part === 'string' ? Buffer.byteLength(part) : part.length);
  let bytes = BATCH_HEADER_BYTES + RECORD_FIELDS_BYTES + size(record.key) + size(record.value);
  for (const [name, value] of Object.entries(record.headers ?? {})) bytes += HEADER_FIELDS_BYTES + Buffer.byteLength(name) + size(value);
  return bytes;
}

/**
 * librdkafka's own cap on one message (its producer's message.max.bytes, default 1000000, which we leave as it is):
 * it refuses a larger record before sending it, whatever the topic allows. kafkajs has no cap of its own.
 */
export const CLIENT_RECORD_CAP: Readonly<Record<KafkaClientName, number>> = { confluent: 1_000_000, kafkajs: Number.POSITIVE_INFINITY };

/**
 * The largest record `client` can write to `topic`, read from the broker: the topic's max.message.bytes (the
 * effective value, which is the broker's message.max.bytes where the topic sets none), capped by the client's own
 * limit. The same bound applies to all the records one transaction writes to one partition with kafkajs, which
 * sends them as one record batch.
 */
export async function recordLimit(admin: KafkaAdmin, topic: string, client: KafkaClientName): Promise<number> {
  const { config } = await admin.describeTopic(topic, ['max.message.bytes']);
  const fromBroker = Number(config['max.message.bytes']);
  if (!Number.isInteger(fromBroker) || fromBroker <= 0) throw new Error(`the broker gave no max.message.bytes for topic ${topic} (got ${JSON.stringify(config['max.message.bytes'] ?? null)})`);
  return Math.min(fromBroker, CLIENT_RECORD_CAP[client]);
}
