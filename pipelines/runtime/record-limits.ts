import { recordBytes, recordLimit, type KafkaAdmin, type KafkaClientName } from '../../connectors/kafka/index.js';
import { RecordTooLargeError } from '../../schemas/index.js';
import type { TransactionRecord } from './transaction.js';
import type { Middleware } from './types.js';

/** How long a topic's limit read from the broker is used before it is read again (a changed max.message.bytes takes effect). */
const LIMIT_TTL_MS = 5 * 60_000;

/** The largest record each output topic takes, read from the broker on first use (recordLimit) and kept a while. */
export class RecordLimits {
  private readonly known = new Map<string, { readonly limit: Promise<number>; readonly readAt: number }>();

  /** `client` names the Kafka client, or tells it when first asked (a processor's context is read lazily). */
  constructor(
    private readonly admin: () => Promise<KafkaAdmin>,
    private readonly clientName: KafkaClientName | (() => KafkaClientName),
  ) {}

  private get client(): KafkaClientName {
    return typeof this.clientName === 'function' ? this.clientName() : this.clientName;
  }

  limitOf(topic: string): Promise<number> {
    const cached = this.known.get(topic);
    if (cached && performance.now() - cached.readAt < LIMIT_TTL_MS) return cached.limit;
    const limit = (async () => recordLimit(await this.admin(), topic, this.client))();
    const entry = { limit, readAt: performance.now() };
    this.known.set(topic, entry);
    // A failed read (the broker away) is tried again next time; the caller sees this one's error.
    limit.catch(() => {
      if (this.known.get(topic) === entry) this.known.delete(topic);
    });
    return limit;
  }

  /**
   * Throws a RecordTooLargeError when one of `records` is above its topic's limit (a topic whose limit cannot be read
   * is not checked), or (`together`, with kafkajs) when
   * the records for one topic add up to more than it: kafkajs sends a transaction's records for a partition as one
   * batch, which the broker checks as a whole, and which partition a key lands on is the client's to say. librdkafka
   * splits its batches to fit by itself.
   */
  async check(records: readonly TransactionRecord[], what: string, together: boolean): Promise<void> {
    const asOneBatch = together && this.client === 'kafkajs';
    const byTopic = new Map<string, { total: number; largest: number; count: number }>();
    for (const record of records) {
      const bytes = recordBytes(record);
      const sum = byTopic.get(record.topic) ?? { total: 0, largest: 0, count: 0 };
      byTopic.set(record.topic, { total: sum.total + bytes, largest: Math.max(sum.largest, bytes), count: sum.count + 1 });
    }
    for (const [topic, { total, largest, count }] of byTopic) {
      // A limit that cannot be read now (a broker away) is not the record's fault: the broker's own refusal of a
      // record too large is a RecordTooLargeError all the same, handled where the transaction is committed.
      const limit = await this.limitOf(topic).catch(() => null);
      if (limit === null) continue;
      if (largest > limit) {
        throw new RecordTooLargeError(`${what} a record of ${largest} bytes to ${topic}, above the ${limit} bytes that topic takes (its max.message.bytes, or the client's cap)`, topic, largest, limit);
      }
      if (asOneBatch && total > limit) {
        throw new RecordTooLargeError(`${what} ${count} records of ${total} bytes in all to ${topic}, above the ${limit} bytes one batch of that topic may hold`, topic, total, limit);
      }
    }
  }
}

/**
 * Refuses a handler's result when one of its records is larger than its topic takes: a RecordTooLargeError, which
 * is not retriable, so the dead-letter middleware outside turns the input into a dead letter with that reason
 * instead of a transaction the broker refuses again on every try.
 */
export function boundedOutputs(processor: string, limits: RecordLimits): Middleware {
  return (next) => async (payload) => {
    const outputs = await next(payload);
    const { record } = payload;
    await limits.check(outputs, `${processor}, handling ${record.topic}[${record.partition}]@${record.offset}, produced`, false);
    return outputs;
  };
}
