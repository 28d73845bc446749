import { randomUUID } from 'node:crypto';
import { fetchTopicEnds, settledTopicOffsets } from './offsets.js';
import type { KafkaPort } from './port.js';

export interface TableRecord {
  readonly key: string | null;
  readonly value: Buffer | null;
  readonly partition: number;
  readonly offset: string;
}

export interface TopicReaderOptions {
  readonly topic: string;
  /** Called for every committed record, in offset order per partition. */
  readonly onRecord: (record: TableRecord) => void | Promise<void>;
  /** Keep following the topic after catching up. @default false */
  readonly follow?: boolean;
  /** Give up if not caught up by then. @default 60000 */
  readonly catchUpTimeoutMs?: number;
  /**
   * Take the end only once the last stable offsets stop moving (two polls 100 ms apart, 5 s at most), so
   * transactions committed just before the call are read: a commit returns when the coordinator has logged
   * it, and the markers that make its records visible reach the partitions a little later. Costs about
   * 200 ms; turn it off only where a record committed a moment ago may be missed. @default true
   */
  readonly settle?: boolean;
}

export interface TopicReader {
  /** Stops following; safe to call more than once. */
  stop(): Promise<void>;
}

/**
 * Reads a topic from its beginning to the end it had when called (committed records only), the way a
 * state store restores from its changelog or a worker loads a table such as the task catalog.
 * Resolves once caught up; with `follow` it keeps applying new records until stopped.
 */
export async function readTopic(kafka: KafkaPort, options: TopicReaderOptions): Promise<TopicReader> {
  const admin = kafka.admin();
  await admin.connect();
  const offsets = await (options.settle === false ? fetchTopicEnds(admin, options.topic) : settledTopicOffsets(admin, options.topic)).finally(() => admin.disconnect());
  // A partition is caught up once the consumer's position reaches its end offset, transaction markers
  // included: transactional topics end with a commit marker no handler ever sees.
  const pending = new Map(offsets.filter((p) => BigInt(p.high) > BigInt(p.low)).map((p) => [p.partition, BigInt(p.high)]));
  // Nothing to read and nothing to follow: joining a group would cost seconds (the broker's initial rebalance delay).
  if (pending.size === 0 && !options.follow) return { stop: async () => undefined };

  // A throwaway group: nothing is committed, so every reader starts from the beginning.
  const consumer = kafka.consumer({ groupId: `trialrun-reader-${randomUUID()}`, fromBeginning: true });
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await consumer.disconnect();
  };

  let resolveCaughtUp!: () => void;
  let rejectCaughtUp!: (error: Error) => void;
  const caughtUp = new Promise<void>((resolve, reject) => {
    resolveCaughtUp = resolve;
    rejectCaughtUp = reject;
  });
  const markProgress = (partition: number, next: bigint): void => {
    const end = pending.get(partition);
    if (end !== undefined && next >= end) pending.delete(partition);
    if (pending.size === 0) resolveCaughtUp();
  };
  markProgress(-1, 0n);

  await consumer.connect();
  await consumer.subscribe([options.topic]);
  await consumer.run({
    onPosition: (_topic, partition, next) => markProgress(partition, next),
    onCrash: rejectCaughtUp,
    eachBatch: async ({ batch, resolveOffset }) => {
      for (const message of batch.messages) {
        await options.onRecord({ key: message.key?.toString() ?? null, value: message.value, partition: batch.partition, offset: message.offset });
        resolveOffset(message.offset);
        markProgress(batch.partition, BigInt(message.offset) + 1n);
      }
    },
  });

  const timeoutMs = options.catchUpTimeoutMs ?? 60_000;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`reading ${options.topic} did not catch up within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([caughtUp, timedOut]);
  } catch (error) {
    await stop();
    throw error;
  } finally {
    clearTimeout(timer);
  }
  if (!options.follow) await stop();
  return { stop };
}

/**
 * Whether consumer group `groupId` has committed past the last record of every partition of `topic`. Past the
 * last record, not the end offset: a transactional topic ends with a commit marker no consumer commits past.
 * Under exactly-once processing the group's outputs for those records are then committed too.
 */
export async function committedPastLastRecord(kafka: KafkaPort, groupId: string, topic: string): Promise<boolean> {
  const needed = new Map<number, bigint>();
  const reader = await readTopic(kafka, { topic, onRecord: ({ partition, offset }) => void needed.set(partition, BigInt(offset) + 1n) });
  await reader.stop();
  const admin = kafka.admin();
  await admin.connect();
  try {
    const [committed] = await admin.fetchGroupOffsets(groupId, [topic]);
    return [...needed].every(([partition, offset]) => BigInt(committed?.partitions.find((p) => p.partition === partition)?.offset ?? -1) >= offset);
  } finally {
    await admin.disconnect();
  }
}
