import type { KafkaAdmin, KafkaConsumer, KafkaProducer, KafkaTransaction, TopicPartitionOffset } from '../../connectors/kafka/index.js';
import { errorMessage, resolveRetryOptions, TimeoutError, withDeadline, withRetries } from '../../schemas/index.js';
import { partitionKey } from './types.js';

/** One record a transaction writes. */
export interface TransactionRecord {
  readonly topic: string;
  readonly key: string;
  readonly value: Buffer | null;
}

/** A step of a transaction not begun because the transaction was given up on (its deadline passed) meanwhile. */
class TransactionGivenUpError extends Error {
  constructor(name: string) {
    super(`${name}: the transaction was given up on; its next step is not begun`);
  }
}

/** The longest a transaction may take before it is given up on (below the brokers' 60 s transaction timeout plus a margin for markers). */
export const TRANSACTION_DEADLINE_MS = 75_000;
/** Registration retries at start: a coordinator loads its transaction log for seconds after its broker restarts. */
const CONNECT_RETRY = resolveRetryOptions({ retries: 8, initialDelayMs: 500, maxDelayMs: 5_000 });
/** Registration retries are bounded (about 25 s) and run before any work: nothing needs to cut them short. */
const NEVER_ABORTED = new AbortController().signal;
/** A failed producer's disconnect is waited for this long at most: it may hang on a broker that is gone. */
const DISCONNECT_WAIT_MS = 5_000;

/**
 * A transactional producer that starts every transaction after a failed one on a new producer. A failed
 * transaction is aborted, but the client may still retry one of its produce requests (the partition's leader
 * moved), and with the old protocol versions kafkajs speaks such a late write joins the producer's next
 * transaction, which commits it: a record of the aborted transaction becomes visible. A new producer under the
 * same transactional id bumps the epoch, which fences whatever the old one still sends; it also recovers a
 * transaction that could neither commit nor abort ("another concurrent operation on the same transaction").
 *
 * A commit whose answer was lost (the coordinator's broker died after EndTxn was sent) may have committed. The
 * new producer's registration returns only once the coordinator has finished the old transaction, so the
 * group's committed offsets, read after it, tell which way it went: if they are the ones this transaction sent,
 * it committed and the commit counts as done. Redoing its records would write them twice.
 */
export class TransactionalProducer {
  private producer: KafkaProducer | undefined;
  /** The producer of a failed transaction was dropped: the next transaction starts on a new one. */
  private broken = false;

  /**
   * `create` makes a connected producer; `name` labels what it says on stderr; `committedOffsets` reads a
   * group's committed offsets back; a transaction that takes longer than `deadlineMs` fails with a retriable
   * TimeoutError.
   */
  constructor(
    private readonly create: () => Promise<KafkaProducer>,
    private readonly name: string,
    private readonly committedOffsets: KafkaAdmin['fetchGroupOffsets'],
    private readonly deadlineMs = TRANSACTION_DEADLINE_MS,
  ) {}

  /** Retries a retriable failure to register (a coordinator still loading after a broker restart) before giving up. */
  async connect(): Promise<void> {
    this.producer = await withRetries(() => this.create(), CONNECT_RETRY, NEVER_ABORTED);
  }

  /**
   * Writes `records` and commits `offsets` for `consumer`'s group in one transaction. A failure before the commit
   * aborts it and is thrown; a failed commit is thrown only if the transaction did not commit.
   */
  async commit(records: readonly TransactionRecord[], consumer: KafkaConsumer, offsets: readonly TopicPartitionOffset[]): Promise<void> {
    if (this.broken) {
      this.producer = await this.create();
      this.broken = false;
    }
    const producer = this.producer;
    if (!producer) throw new Error(`${this.name}: the transactional producer is not connected`);
    const progress = { committing: false, givenUp: false };
    try {
      // A client call that never returns (a broker gone mid-request) must not hold the processor for good.
      await withDeadline(this.run(producer, records, consumer, offsets, progress), this.deadlineMs, () => {
        progress.givenUp = true;
        return new TimeoutError(`${this.name}: a transaction`, this.deadlineMs);
      });
    } catch (error) {
      // The deadline does not stop a step already running, but no step starts after it (the producer is dropped).
      progress.givenUp = true;
      await this.drop(producer);
      if (progress.committing && (await this.committedAfterAll(consumer.groupId, offsets))) {
        process.stderr.write(`[${this.name}] a transaction's commit failed (${errorMessage(error)}), yet the transaction committed\n`);
        return;
      }
      throw error;
    }
  }

  /**
   * The transaction's steps. Each checks first that the transaction was not given up on meanwhile: a step begun
   * on a producer being dropped races its disconnect (with the confluent client, a native call beside the handle's
   * destruction, issue 46), and nothing it did would count.
   */
  private async run(producer: KafkaProducer, records: readonly TransactionRecord[], consumer: KafkaConsumer, offsets: readonly TopicPartitionOffset[], progress: { committing: boolean; givenUp: boolean }): Promise<void> {
    const step = (): void => {
      if (progress.givenUp) throw new TransactionGivenUpError(this.name);
    };
    const transaction: KafkaTransaction = await producer.transaction();
    try {
      step();
      const byTopic = new Map<string, Array<{ key: string; value: Buffer | null }>>();
      for (const record of records) {
        const list = byTopic.get(record.topic) ?? [];
        list.push({ key: record.key, value: record.value });
        byTopic.set(record.topic, list);
      }
      if (byTopic.size > 0) await transaction.sendBatch([...byTopic].map(([topic, messages]) => ({ topic, messages })));
      step();
      await transaction.sendOffsets(consumer, offsets);
      step();
    } catch (error) {
      // Given up on: the next producer's registration aborts it; an abort now would race the drop.
      if (progress.givenUp) throw error;
      await transaction.abort().catch((abortError: unknown) => {
        // Said once per transaction: a consumer's client may log the error only at a level we mute.
        process.stderr.write(`[${this.name}] a transaction could neither commit (${errorMessage(error)}) nor abort (${errorMessage(abortError)})\n`);
      });
      throw error;
    }
    progress.committing = true;
    await transaction.commit();
  }

  /** Disconnected at once, so that none of its retries is still sent when the next transaction begins. */
  private async drop(producer: KafkaProducer): Promise<void> {
    this.broken = true;
    await withDeadline(producer.disconnect(), DISCONNECT_WAIT_MS, () => new Error('disconnect timed out')).catch(() => undefined);
  }

  /** Whether the group's committed offsets are those `offsets` (the transaction committed); false when that cannot be read. */
  private async committedAfterAll(groupId: string, offsets: readonly TopicPartitionOffset[]): Promise<boolean> {
    try {
      this.producer = await this.create();
      this.broken = false;
      const committed = await this.committedOffsets(groupId, [...new Set(offsets.map((offset) => offset.topic))]);
      const read = new Map(committed.flatMap(({ topic, partitions }) => partitions.map((entry) => [partitionKey(topic, entry.partition), entry] as const)));
      return offsets.every(({ topic, partition, offset, metadata }) => {
        const entry = read.get(partitionKey(topic, partition));
        // The broker keeps no metadata as an empty string.
        return entry !== undefined && entry.offset === offset && (entry.metadata ?? '') === (metadata ?? '');
      });
    } catch (error) {
      process.stderr.write(`[${this.name}] whether a failed commit took effect is unknown (${errorMessage(error)}); its records are handled again\n`);
      return false;
    }
  }

  async disconnect(): Promise<void> {
    if (!this.broken) await this.producer?.disconnect();
    this.producer = undefined;
    this.broken = false;
  }
}
