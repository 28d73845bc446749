import type { KafkaPort, TopicReader } from '../../connectors/kafka/index.js';
import { readTopic } from '../../connectors/kafka/index.js';
import type { TopicSerde } from '../../connectors/registry/index.js';
import { errorMessage, NotFoundError, type TopicKey, type TopicNames, type TopicValue } from '../../schemas/index.js';

/**
 * A whole compacted topic held in memory and kept current (Kafka Streams' GlobalKTable), for lookups
 * such as "the task this trajectory came from". Records that fail to decode are skipped with a warning:
 * their owner's own consumer dead-letters them.
 */
export class GlobalTable<K extends TopicKey> {
  private readonly rows = new Map<string, TopicValue<K>>();
  private reader: TopicReader | undefined;

  private constructor(private readonly topicKey: K) {}

  static async load<K extends TopicKey>(kafka: KafkaPort, serde: TopicSerde, names: TopicNames, topicKey: K): Promise<GlobalTable<K>> {
    const table = new GlobalTable(topicKey);
    table.reader = await readTopic(kafka, {
      topic: names.name(topicKey),
      follow: true,
      onRecord: async ({ key, value }) => {
        if (key === null) return;
        if (value === null) {
          table.rows.delete(key);
          return;
        }
        try {
          table.rows.set(key, await serde.decode(topicKey, value));
        } catch (error) {
          process.stderr.write(`[global-table ${names.name(topicKey)}] skipping key ${key}: ${errorMessage(error)}\n`);
        }
      },
    });
    return table;
  }

  /** The row for `key`; a miss is retriable, since the row may still be on its way. */
  get(key: string): TopicValue<K> {
    const row = this.rows.get(key);
    if (row === undefined) throw new NotFoundError(`no ${this.topicKey} record with key ${key} (yet)`);
    return row;
  }

  get size(): number {
    return this.rows.size;
  }

  async close(): Promise<void> {
    await this.reader?.stop();
  }
}
