import type { KafkaConsumer, KafkaProducer, TopicPartitionOffset } from '../../connectors/kafka/index.js';
import { errorMessage } from '../../schemas/index.js';

/**
 * A transactional producer that outlives a transaction which could neither commit nor abort (a broker
 * fail-over outlasting both calls). Such a transaction leaves its producer in a state no later transaction
 * can start from ("another concurrent operation on the same transaction"), so the producer is replaced
 * before the next one; a new producer with the same transactional id aborts what the old one left open.
 */
/** One record a transaction writes. */
export interface TransactionRecord {
  readonly topic: string;
  readonly key: string;
  readonly value: Buffer | null;
}

export class TransactionalProducer {
  private producer: KafkaProducer | undefined;
  private broken = false;

  /** `create` makes a connected producer; `name` labels the one line said when one is replaced. */
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
    if (!this.producer) throw new Error(`${this.name}: the transactional producer is not connected`);
    if (this.broken) {
      await this.producer.disconnect().catch(() => undefined);
      this.producer = await this.create();
      this.broken = false;
    }
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
        process.stderr.write(`[${this.name}] a transaction could neither commit (${errorMessage(error)}) nor abort (${errorMessage(abortError)}); its producer is replaced before the next one\n`);
        this.broken = true;
      });
      throw error;
    }
  }

  async disconnect(): Promise<void> {
    await this.producer?.disconnect();
    this.producer = undefined;
  }
}
