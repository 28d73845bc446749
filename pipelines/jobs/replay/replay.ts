import { createHash } from 'node:crypto';
import { catalogTopics, checkRange, ensureTopics, rangeGroupId, readRange, requireTopics, settledTopicOffsets, type KafkaAdmin, type KafkaPort, type Position } from '../../../connectors/kafka/index.js';
import { TopicSerde } from '../../../connectors/registry/index.js';
import { ConfigError, topicNames, type TopicKey, type TopicNames } from '../../../schemas/index.js';
import { sleep, type ProcessorContext } from '../../runtime/index.js';

/** The header every copied record carries: `<source topic>/<partition>/<offset>`, so a copy traces back to its original. */
export const REPLAY_SOURCE_HEADER = 'trialrun-replay-source';

export interface TopicReplayOptions {
  /** Physical name of the topic to re-read. */
  source: string;
  /** Physical name of the topic to copy into; created with the source's partitions and settings when missing. */
  target: string;
  /** Inclusive start on every partition. */
  from: Position;
  /** Exclusive end on every partition, resolved when the replay starts. @default 'latest' */
  to?: Position;
  /** Called as the copy advances with records copied so far and records in range (see ReadRangeOptions.onProgress). @default none */
  onProgress?: (done: number, total: number) => void;
  /** @default never aborted */
  signal?: AbortSignal;
}

export interface TopicReplayReport {
  readonly source: string;
  readonly target: string;
  /** The replay's own consumer group; the same range and target always get the same one. */
  readonly groupId: string;
  /** Records copied by this call (0 when the same replay already ran to the end). */
  readonly copied: number;
  /** Offsets in range over all partitions (transaction markers included). */
  readonly total: number;
}

const describePosition = (position: Position): string =>
  typeof position === 'string' ? position : 'timestamp' in position ? `@${position.timestamp}` : String(position.offset);

/** Creates `target` like `source` (partition count, cleanup and retention) unless it exists. */
async function ensureCopyTopic(admin: KafkaAdmin, source: string, target: string): Promise<void> {
  await requireTopics(admin, [source], 'see trialrun topics list');
  const { partitions, config } = await admin.describeTopic(source, ['cleanup.policy', 'retention.ms']);
  if (partitions === 0) throw new ConfigError(`replay: topic ${source} has no partitions`);
  await ensureTopics(admin, [{ topic: target, partitions, config }]);
}

/**
 * Copies a range of one topic into another, keyed, partitioned and timestamped as the source, each
 * record with a header naming its original. Every batch is written in one Kafka transaction together with
 * the replay group's progress, so an interrupted replay resumes where it stopped and running the same
 * replay again copies nothing twice. Live consumer groups are never touched.
 */
export async function replayIntoTopic(kafka: KafkaPort, options: TopicReplayOptions): Promise<TopicReplayReport> {
  if (options.source === options.target) throw new ConfigError(`a replay's target must differ from its source (${options.source})`);
  const to = options.to ?? 'latest';
  checkRange(options.from, to);
  const groupId = rangeGroupId(options.source, options.from, to, `into-topic:${options.target}`);
  const admin = kafka.admin();
  await admin.connect();
  let samePartitions: boolean;
  try {
    await ensureCopyTopic(admin, options.source, options.target);
    const [source, target] = await Promise.all([admin.describeTopic(options.source, []), admin.describeTopic(options.target, [])]);
    samePartitions = source.partitions === target.partitions;
  } finally {
    await admin.disconnect();
  }

  // The transactional id is the group's: a replay restarted after a crash fences its own zombie.
  const producer = kafka.producer({ transactionalId: `${groupId}-copy` });
  await producer.connect();
  try {
    const report = await readRange(kafka, {
      topic: options.source,
      from: options.from,
      to,
      groupId,
      signal: options.signal,
      onProgress: options.onProgress,
      onBatch: async ({ partition, records, nextOffset, consumer }) => {
        const transaction = await producer.transaction();
        try {
          if (records.length > 0) {
            await transaction.send({
              topic: options.target,
              messages: records.map((record) => ({
                key: record.key,
                value: record.value,
                timestamp: record.timestamp,
                // Same partition when the layouts match; otherwise the key decides, as it did for the source.
                ...(samePartitions ? { partition } : {}),
                headers: { ...record.headers, [REPLAY_SOURCE_HEADER]: `${options.source}/${partition}/${record.offset}` },
              })),
            });
          }
          await transaction.sendOffsets(consumer, [{ topic: options.source, partition, offset: nextOffset }]);
          await transaction.commit();
        } catch (error) {
          await transaction.abort().catch(() => undefined);
          throw error;
        }
      },
    });
    return { source: options.source, target: options.target, groupId, copied: report.delivered, total: report.total };
  } finally {
    await producer.disconnect();
  }
}

/** What a replay drives: a stream processor (StreamProcessor has this shape). */
export interface ReplayTarget {
  /** The consumer group whose committed offsets show how far it got. */
  readonly groupId: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface ProcessorReplayOptions {
  /** The processor's name, e.g. `learner`; part of the replay's identity. */
  processor: string;
  /** The catalog topics it reads; each is copied over the range into the replay's namespace. */
  inputs: readonly TopicKey[];
  from: Position;
  /** @default 'latest' */
  to?: Position;
  /** Builds the processor on the replay's context: it reads and writes only topics under the replay's prefix. */
  create: (context: ProcessorContext) => ReplayTarget;
  /** Called as the copy and the processing advance. @default none */
  onProgress?: (progress: ProcessorReplayProgress) => void;
  /** How often the processor's progress is checked. @default 500 */
  pollMs?: number;
  /** Give up if the processor has not caught up by then. @default 1800000 */
  timeoutMs?: number;
  /** @default never aborted */
  signal?: AbortSignal;
}

export interface ProcessorReplayProgress {
  readonly stage: 'copy' | 'process';
  readonly topic: string;
  readonly done: number;
  readonly total: number;
}

export interface ProcessorReplayReport {
  /** The replay's namespace: its inputs, outputs, state and group live under this topic prefix. */
  readonly prefix: string;
  readonly copies: readonly TopicReplayReport[];
  /** Input offsets the processor got through in this call. */
  readonly processed: number;
  readonly elapsedMs: number;
}

/** The topic prefix of a processor replay: the same processor, inputs and range always get the same one. */
export function replayPrefix(names: TopicNames, processor: string, inputs: readonly TopicKey[], from: Position, to: Position): string {
  const identity = JSON.stringify([processor, inputs.map((key) => names.name(key)).sort(), describePosition(from), describePosition(to)]);
  return `${names.prefix}replay-${processor}-${createHash('sha256').update(identity).digest('hex').slice(0, 10)}.`;
}

async function committedOffsets(admin: KafkaAdmin, groupId: string, topics: readonly string[]): Promise<Map<string, bigint>> {
  const committed = new Map<string, bigint>();
  for (const entry of await admin.fetchGroupOffsets(groupId, topics)) {
    for (const { partition, offset } of entry.partitions) committed.set(`${entry.topic}:${partition}`, BigInt(offset));
  }
  return committed;
}

/**
 * Re-runs a processor over a time or offset range: its inputs are copied (transactionally, idempotently)
 * into topics under the replay's own prefix, and a fresh instance of the processor, with its own group,
 * state stores and outputs under that prefix, consumes them until it has caught up. Live groups, state
 * and outputs are never touched (a learner retrained from stored rewards does not publish over the live
 * policy), and running the same replay again copies nothing and produces nothing twice.
 */
export async function replayIntoProcessor(context: ProcessorContext, options: ProcessorReplayOptions): Promise<ProcessorReplayReport> {
  const started = performance.now();
  if (options.inputs.length === 0) throw new ConfigError(`ProcessorReplayOptions.inputs of ${options.processor}: at least one input topic is required`);
  const pollMs = options.pollMs ?? 500;
  const timeoutMs = options.timeoutMs ?? 1_800_000;
  if (!(pollMs > 0) || !(timeoutMs > 0)) throw new ConfigError('ProcessorReplayOptions.pollMs and timeoutMs must be > 0');
  const to = options.to ?? 'latest';
  checkRange(options.from, to);
  const names = topicNames(replayPrefix(context.names, options.processor, options.inputs, options.from, to));
  const replayContext: ProcessorContext = { kafka: context.kafka, serde: new TopicSerde(names), names };

  const admin = context.kafka.admin();
  await admin.connect();
  try {
    // A missing input is named before the replay's namespace is created.
    await requireTopics(admin, options.inputs.map((key) => context.names.name(key)), 'see trialrun topics list');
    await ensureTopics(admin, catalogTopics(names));
    await replayContext.serde.register();
    const copies: TopicReplayReport[] = [];
    for (const key of options.inputs) {
      const source = context.names.name(key);
      copies.push(
        await replayIntoTopic(context.kafka, {
          source,
          target: names.name(key),
          from: options.from,
          to,
          signal: options.signal,
          onProgress: (done, total) => options.onProgress?.({ stage: 'copy', topic: source, done, total }),
        }),
      );
    }

    // The copies end in a commit marker, which no consumer is handed: a partition is done once its
    // committed offset reaches the marker, i.e. one short of the end. Settled ends, since the last
    // copy's markers may still be on the way.
    const inputTopics = options.inputs.map((key) => names.name(key));
    const ends = new Map<string, bigint>();
    for (const topic of inputTopics) for (const p of await settledTopicOffsets(admin, topic)) ends.set(`${topic}:${p.partition}`, BigInt(p.high));
    const processor = options.create(replayContext);
    const startOffsets = await committedOffsets(admin, processor.groupId, inputTopics);
    const progress = async (): Promise<{ done: number; total: number; caughtUp: boolean }> => {
      const committed = await committedOffsets(admin, processor.groupId, inputTopics);
      let done = 0;
      let total = 0;
      let caughtUp = true;
      for (const [key, end] of ends) {
        const from = (startOffsets.get(key) ?? -1n) < 0n ? 0n : startOffsets.get(key)!;
        const at = committed.get(key) ?? -1n;
        const reached = at < 0n ? 0n : at;
        // Done up to the final commit marker, which no consumer is handed: the partition counts as whole.
        const whole = end === 0n || reached >= end - 1n;
        if (!whole) caughtUp = false;
        total += Number(end > from ? end - from : 0n);
        done += Number(whole ? (end > from ? end - from : 0n) : reached > from ? reached - from : 0n);
      }
      return { done, total, caughtUp };
    };

    const first = await progress();
    if (first.caughtUp) return { prefix: names.prefix, copies, processed: 0, elapsedMs: performance.now() - started };
    await processor.start();
    const deadline = Date.now() + timeoutMs;
    const signal = options.signal ?? new AbortController().signal;
    try {
      for (;;) {
        const now = await progress();
        options.onProgress?.({ stage: 'process', topic: inputTopics.join(','), done: now.done, total: now.total });
        if (now.caughtUp) return { prefix: names.prefix, copies, processed: now.done, elapsedMs: performance.now() - started };
        if (Date.now() > deadline) throw new Error(`replay into ${options.processor}: not caught up within ${timeoutMs} ms (${now.done}/${now.total} offsets)`);
        await sleep(pollMs, signal);
      }
    } finally {
      await processor.stop();
    }
  } finally {
    await admin.disconnect();
  }
}
