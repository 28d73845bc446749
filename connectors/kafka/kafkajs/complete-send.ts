import { Partitioners, type ICustomPartitioner, type Message, type RecordMetadata, type TopicMessages } from 'kafkajs';
import { KafkaError } from '../../../schemas/index.js';
import type { KafkaLog } from '../options.js';

/**
 * Where kafkajs's partitioner placed each message object, as of the latest attempt to send it. kafkajs partitions
 * a send's messages again on each of its retries, and hands the partitioner the caller's message objects.
 */
export class PartitionLedger {
  private readonly placed = new WeakMap<Message, number>();

  /** kafkajs's default partitioner (murmur2 of the key, as Java's; a message's own partition wins), noting each choice. */
  readonly createPartitioner: ICustomPartitioner = () => {
    const choose = Partitioners.DefaultPartitioner();
    return (args) => {
      const partition = choose(args);
      this.placed.set(args.message, partition);
      return partition;
    };
  };

  partitionOf(message: Message): number | undefined {
    return this.placed.get(message);
  }
}

/** Rounds of sending again what an answer left out before the send fails (retriably: its caller redoes it). */
const MAX_RESENDS = 5;

/**
 * Sends `batch` and then, to the partition kafkajs chose for them, the messages whose partition its answer does
 * not cover, until every partition is answered for.
 *
 * kafkajs 2.2.4 can resolve a send that skipped a partition. Its retry after a leader change sends again only to
 * the brokers that have not answered yet: a partition whose leadership moved to a broker that already answered for
 * another partition is never sent, and a transaction then commits without its records (kafkajs PR 1798). Seen here
 * as a reward lost when a broker was SIGKILLed: one member of a group's two rewards written, the other's partition
 * holding only the commit marker.
 */
export async function sendCompletely(
  send: (batch: TopicMessages[]) => Promise<RecordMetadata[]>,
  batch: TopicMessages[],
  ledger: PartitionLedger,
  log: KafkaLog,
): Promise<void> {
  let pending = batch;
  for (let round = 0; ; round++) {
    const answered = new Set((await send(pending)).map((meta) => partitionKey(meta.topicName, meta.partition)));
    const left = unanswered(pending, answered, ledger);
    if (left.length === 0) return;
    const where = left.map(({ topic, messages }) => `${topic}[${[...new Set(messages.map((m) => m.partition))].join(',')}]`).join(', ');
    if (round === MAX_RESENDS) {
      throw new KafkaError(`kafka (kafkajs): the records for ${where} were still not sent after sending them again ${MAX_RESENDS} times`, 'RECORDS_NOT_SENT', { retriable: true });
    }
    log({ level: 'warn', namespace: 'Producer', message: `the send left out ${where} (kafkajs skips a partition whose leader moved to a broker that had answered); sending those records again`, fields: {} });
    pending = left;
  }
}

const partitionKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

/** The messages of `batch` whose partition the answer left out, each pinned to the partition it was meant for. */
function unanswered(batch: readonly TopicMessages[], answered: ReadonlySet<string>, ledger: PartitionLedger): TopicMessages[] {
  return batch.flatMap(({ topic, messages }) => {
    const left = messages.flatMap((message) => {
      const partition = ledger.partitionOf(message) ?? message.partition;
      if (partition !== undefined && answered.has(partitionKey(topic, partition))) return [];
      return [partition === undefined ? message : { ...message, partition }];
    });
    return left.length === 0 ? [] : [{ topic, messages: left }];
  });
}
