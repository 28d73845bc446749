import type { KafkaConsumer, KafkaProducer, TopicPartitionOffset } from '../../connectors/kafka/index.js';
import { errorMessage } from '../../schemas/index.js';

/** One record a transaction writes. */
export interface TransactionRecord {
  readonly topic: string;
  readonly key: string;
  readonly value: Buffer | null;
}

/**
 * A transactional producer that starts every transaction after a failed one on a new producer. A failed
 * transaction is aborted, but the client may still retry one of its produce requests (the partition's leader
 * moved), and with the old protocol versions kafkajs speaks such a late write joins the producer's next
 * transaction, which commits it: a record of the aborted transaction becomes visible. A new producer under the
 * same transactional id bumps the epoch, which fences whatever the old one still sends; it also recovers a
 * transaction that could neither commit nor abort ("another concurrent operation on the same transaction").
 */
export class TransactionalProducer {
  private producer: KafkaProducer | undefined;
  private broken = false;

  /** `create` makes a connected producer; `name` labels what it says on stderr. */
  constructor(
    private readonly create: () => Promise<KafkaProducer>,
    private readonly name: string,
  ) {}

  async connect(): Promise<void> {
    this.producer = await this.create();
  }

  /**
   * Writes `records` and commits `offsets` for `consumer`'s group in one transaction; any failure aborts it
   * and is thrown.
   */
  async commit(records: readonly TransactionRecord[], consumer: KafkaConsumer, offsets: readonly TopicPartitionOffset[]): Promise<void> {
    if (this.broken) {
      this.producer = await this.create();
      this.broken = false;
    }
    if (!this.producer) throw new Error(`${this.name}: the transactional producer is not connected`);
    const transaction = await this.producer.transaction();
    try {
      const byTopic = new Map<string, Array<{ key: string; value: Buffer | null }>>();
      for (const record of records) {
        const list = byTopic.get(record.topic) ?? [];
        list.push({ key: record.key, value: record.value });
        byTopic.set(record.topic, list);
      }
      if (byTopic.size > 0) await transaction.sendBatch([...byTopic].map(([topic, messages]) => ({ topic, messages })));
      await transaction.sendOffsets(consumer, offsets);
      await transaction.commit();
    } catch (error) {
      await transaction.abort().catch((abortError: unknown) => {
        // Said once per transaction: a consumer's client may log the error only at a level we mute.
        process.stderr.write(`[${this.name}] a transaction could neither commit (${errorMessage(error)}) nor abort (${errorMessage(abortError)})\n`);
      });
      // Disconnected at once, so that none of its retries is still sent when the next transaction begins.
      this.broken = true;
      await this.producer.disconnect().catch(() => undefined);
      throw error;
    }
  }

  async disconnect(): Promise<void> {
    if (!this.broken) await this.producer?.disconnect();
    this.producer = undefined;
    this.broken = false;
  }
}
