import { createHash } from 'node:crypto';
import type { KafkaConsumer, KafkaPort } from './port.js';
import { ConfigError } from '../../schemas/index.js';
import { fetchTopicEnds, settledTopicOffsets } from './offsets.js';
import type { TableRecord } from './table.js';

/** A point in a topic: the start or end of what exists, a broker timestamp (ms), or one offset for every partition. */
export type Position = 'earliest' | 'latest' | { readonly timestamp: number } | { readonly offset: bigint };

export interface RangeRecord extends TableRecord {
  readonly timestamp: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** One fetched batch of one partition, for callers that commit progress themselves. */
export interface RangeBatch {
  readonly partition: number;
  /** The batch's records inside the range, in offset order (empty when the fetch held only aborted records). */
  readonly records: readonly RangeRecord[];
  /** The group's progress on this partition once the batch is handled: commit it for `groupId`. */
  readonly nextOffset: string;
  /** The read's consumer, for `transaction.sendOffsets(consumer, ...)` (its group metadata fences a zombie). */
  readonly consumer: KafkaConsumer;
}

export interface ReadRangeOptions {
  readonly topic: string;
  /** Inclusive start. */
  readonly from: Position;
  /** Exclusive end, resolved once when the read starts ('latest' includes what was committed just before). @default 'latest' */
  readonly to?: Position;
  /**
   * The read's own consumer group; it commits progress, so reading the same range again under the same
   * group resumes where it stopped and never hands a record over twice.
   * @default rangeGroupId(topic, from, to, 'read')
   */
  readonly groupId?: string;
  /** Called for every record in range; the read commits the group's progress after each batch. Give this or `onBatch`. */
  readonly onRecord?: (record: RangeRecord) => void | Promise<void>;
  /**
   * Called for every fetched batch instead; the callee commits `nextOffset` for `groupId` itself, in the
   * same Kafka transaction as what it wrote (`transaction.sendOffsets(batch.consumer, ...)`), so a re-run of the same range
   * under the same group writes nothing twice.
   */
  readonly onBatch?: (batch: RangeBatch) => Promise<void>;
  /**
   * Called once before the first batch and after each batch, with the records handed over so far and the
   * records in range. The latter starts as the offsets in range and loses the transaction markers and
   * aborted records as the read passes them, so when the read ends the two are equal (100%), never fewer
   * records than handed over.
   */
  readonly onProgress?: (done: number, total: number) => void;
  readonly signal?: AbortSignal;
}

export interface RangeReport {
  readonly groupId: string;
  /** Records handed to onRecord by this call. */
  readonly delivered: number;
  /** Offsets in range (transaction markers included), over all partitions. */
  readonly total: number;
  readonly partitions: ReadonlyArray<{ partition: number; start: string; end: string }>;
}

const describe = (position: Position): string =>
  typeof position === 'string' ? position : 'timestamp' in position ? `t${position.timestamp}` : `o${position.offset}`;

/** A consumer group id that is the same for the same topic, range and purpose: what makes a replay idempotent. */
export function rangeGroupId(topic: string, from: Position, to: Position, purpose: string): string {
  const digest = createHash('sha256').update(JSON.stringify([topic, describe(from), describe(to), purpose])).digest('hex').slice(0, 16);
  return `trialrun-replay-${digest}`;
}

const POSITION_FORMS = 'use earliest, latest, an offset (a whole number >= 0), @<epoch ms>, or an ISO time such as 2025-06-01T00:00:00Z';

/** Parses `earliest`, `latest`, an ISO time, `@<ms since epoch>`, or a plain number as an offset. */
export function parsePosition(text: string): Position {
  const trimmed = text.trim();
  if (trimmed === 'earliest' || trimmed === 'latest') return trimmed;
  if (/^-\s*\d/.test(trimmed) || /^@-/.test(trimmed)) throw new ConfigError(`"${text}" is negative: offsets and times start at 0; ${POSITION_FORMS}`);
  if (/^\d+$/.test(trimmed)) return { offset: BigInt(trimmed) };
  if (/^@\d+$/.test(trimmed)) {
    const timestamp = Number(trimmed.slice(1));
    if (!Number.isSafeInteger(timestamp)) throw new ConfigError(`"${text}" is not a time: ${POSITION_FORMS}`);
    return { timestamp };
  }
  // An ISO date or time; Date.parse alone also takes "1" or "June" and guesses a year.
  const ms = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(trimmed) ? Date.parse(trimmed) : Number.NaN;
  if (Number.isNaN(ms)) throw new ConfigError(`"${text}" is not a position: ${POSITION_FORMS}`);
  if (ms < 0) throw new ConfigError(`"${text}" is before 1970: times start at the epoch; ${POSITION_FORMS}`);
  return { timestamp: ms };
}

/** A position as the user wrote it, for messages. */
export function describePosition(position: Position): string {
  if (typeof position === 'string') return position;
  return 'timestamp' in position ? new Date(position.timestamp).toISOString() : `offset ${position.offset}`;
}

/**
 * Refuses a range that cannot hold anything: a start after its end (between two offsets, two times, or
 * `latest` before anything), or a time in the future (a topic has no records there yet; `latest` says
 * "up to now"). Checked before any topic is created or any group joined. Offsets and times compare only
 * among themselves; which offset a time is at, only the broker knows.
 */
export function checkRange(from: Position, to: Position, now: number = Date.now()): void {
  for (const [name, position] of [['from', from], ['to', to]] as const) {
    if (typeof position === 'object' && 'timestamp' in position && position.timestamp > now) {
      throw new ConfigError(`--${name} ${describePosition(position)} is in the future (now is ${new Date(now).toISOString()}); use latest to read up to now`);
    }
  }
  const after = (reason: string): ConfigError => new ConfigError(`--from ${describePosition(from)} is after --to ${describePosition(to)}: ${reason}`);
  if (from === 'latest' && to !== 'latest') throw after('nothing comes after latest');
  if (to === 'earliest' && from !== 'earliest') throw after('nothing comes before earliest');
  if (typeof from === 'object' && typeof to === 'object') {
    if ('offset' in from && 'offset' in to && from.offset > to.offset) throw after('the range would be empty');
    if ('timestamp' in from && 'timestamp' in to && from.timestamp > to.timestamp) throw after('the range would be empty');
  }
}

async function resolveOffsets(kafka: KafkaPort, topic: string, position: Position): Promise<Map<number, bigint>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    // Settled, so 'latest' includes transactions committed just before the call (see settledTopicOffsets).
    const watermarks = await (position === 'latest' ? settledTopicOffsets(admin, topic) : fetchTopicEnds(admin, topic));
    const low = new Map(watermarks.map((p) => [p.partition, BigInt(p.low)]));
    const high = new Map(watermarks.map((p) => [p.partition, BigInt(p.high)]));
    if (position === 'earliest') return low;
    if (position === 'latest') return high;
    if ('offset' in position) {
      return new Map([...high].map(([partition, end]) => [partition, clamp(position.offset, low.get(partition)!, end)]));
    }
    // The first offset whose timestamp is at or after the given time, or the end when there is none yet.
    const byTime = await admin.fetchTopicOffsetsByTimestamp(topic, position.timestamp);
    return new Map(byTime.map((p) => [p.partition, clamp(BigInt(p.offset), low.get(p.partition)!, high.get(p.partition)!)]));
  } finally {
    await admin.disconnect();
  }
}

const clamp = (value: bigint, min: bigint, max: bigint): bigint => (value < min ? min : value > max ? max : value);

/**
 * Re-reads a bounded range of a topic (committed records only) with its own consumer group, so live
 * groups are never disturbed. Offsets are resolved on every partition, by timestamp where asked.
 */
export async function readRange(kafka: KafkaPort, options: ReadRangeOptions): Promise<RangeReport> {
  if ((options.onRecord === undefined) === (options.onBatch === undefined)) throw new ConfigError('ReadRangeOptions: give exactly one of onRecord and onBatch');
  const to = options.to ?? 'latest';
  checkRange(options.from, to);
  const groupId = options.groupId ?? rangeGroupId(options.topic, options.from, to, 'read');
  const [starts, ends] = await Promise.all([resolveOffsets(kafka, options.topic, options.from), resolveOffsets(kafka, options.topic, to)]);

  // Resume from this group's committed progress when it lies inside the range.
  const admin = kafka.admin();
  await admin.connect();
  const committed = await admin.fetchGroupOffsets(groupId, [options.topic]).finally(() => admin.disconnect());
  for (const { partition, offset } of committed[0]?.partitions ?? []) {
    const done = BigInt(offset);
    if (done >= 0n && done > (starts.get(partition) ?? 0n)) starts.set(partition, done);
  }

  const partitions = [...ends].map(([partition, end]) => ({ partition, start: starts.get(partition) ?? end, end }));
  const total = partitions.reduce((sum, p) => sum + Number(p.end > p.start ? p.end - p.start : 0n), 0);
  const pending = new Set(partitions.filter((p) => p.end > p.start).map((p) => p.partition));
  const report = (delivered: number): RangeReport => ({
    groupId,
    delivered,
    total,
    partitions: partitions.map((p) => ({ partition: p.partition, start: p.start.toString(), end: p.end.toString() })),
  });
  // Records still possibly in range: the offsets not yet passed, less the markers and aborted records passed.
  let inRange = total;
  options.onProgress?.(0, inRange);
  if (pending.size === 0) return report(0);
  const position = new Map(partitions.map((p) => [p.partition, p.start]));

  const endOf = new Map(partitions.map((p) => [p.partition, p.end]));
  const consumer = kafka.consumer({ groupId, fromBeginning: true });
  let delivered = 0;
  let resolveDone!: () => void;
  let rejectDone!: (error: unknown) => void;
  const finished = new Promise<void>((resolve, reject) => {
    resolveDone = resolve;
    rejectDone = reject;
  });
  const onAbort = (): void => rejectDone(options.signal?.reason ?? new Error('range read aborted'));
  options.signal?.addEventListener('abort', onAbort, { once: true });
  // The position passes transaction markers and aborted records no batch shows: what ends a partition.
  const onPosition = (_topic: string, partition: number, reached: bigint): void => {
    const end = endOf.get(partition);
    if (end === undefined) return;
    const next = reached < end ? reached : end;
    const from = position.get(partition)!;
    if (next > from) {
      // What the position passed beyond the records handed over: none of it was in range.
      inRange -= Number(next - from);
      position.set(partition, next);
      options.onProgress?.(delivered, inRange);
    }
    if (reached >= end && pending.delete(partition) && pending.size === 0) resolveDone();
  };

  try {
    await consumer.connect();
    await consumer.subscribe([options.topic]);
    await consumer.run({
      onPosition,
      onCrash: rejectDone,
      eachBatch: async ({ batch, resolveOffset }) => {
        const end = endOf.get(batch.partition) ?? 0n;
        const from = position.get(batch.partition) ?? 0n;
        const records: RangeRecord[] = [];
        for (const message of batch.messages) {
          if (BigInt(message.offset) < from) continue;
          if (BigInt(message.offset) >= end) break;
          records.push({ key: message.key?.toString() ?? null, value: message.value, partition: batch.partition, offset: message.offset, timestamp: message.timestamp, headers: message.headers });
        }
        if (records.length === 0) return;
        // The group's progress is in offsets: past the last record handed over; markers are passed by onPosition.
        const reached = BigInt(records[records.length - 1]!.offset) + 1n;
        const next = reached < end ? reached : end;
        if (next > from) {
          inRange -= Number(next - from) - records.length;
          position.set(batch.partition, next);
        }
        if (options.onBatch) {
          await options.onBatch({ partition: batch.partition, records, nextOffset: next.toString(), consumer });
          delivered += records.length;
          resolveOffset(records[records.length - 1]!.offset);
        } else {
          for (const record of records) {
            await options.onRecord!(record);
            delivered++;
            resolveOffset(record.offset);
          }
          await consumer.commitOffsets([{ topic: options.topic, partition: batch.partition, offset: next.toString() }]);
        }
        options.onProgress?.(delivered, inRange);
        if (next >= end && pending.delete(batch.partition) && pending.size === 0) resolveDone();
      },
    });
    for (const p of partitions) if (p.end > p.start) consumer.seek(options.topic, p.partition, p.start.toString());
    await finished;
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    await consumer.disconnect();
  }
  return report(delivered);
}
