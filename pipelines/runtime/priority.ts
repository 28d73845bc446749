/**
 * Bookkeeping for handling the records of a partition out of offset order (highest priority first) while
 * keeping exactly-once: a partition's committed offset stays at the lowest record not handled yet, and the
 * commit's metadata lists, as a bitmap from that offset, the records above it that are already handled.
 * Both are written in the same transaction as the handler's outputs, so a restarted consumer resumes at the
 * offset and skips what the metadata marks.
 */

const PREFIX = 'trialrun-handled:v1:';

/** Records of one batch reordered at most: the handled-above bitmap must fit Kafka's offset metadata (4 KiB). */
export const MAX_REORDERED = 1024;

export interface PartitionProgress {
  /** The committed offset: every record below it is handled. Null when the group never committed. */
  readonly next: bigint | null;
  /** Records at or above `next` already handled. */
  readonly handled: ReadonlySet<bigint>;
}

/** The commit metadata for `handled` records at or above `next`. */
export function encodeHandled(next: bigint, handled: Iterable<bigint>): string {
  const above = [...handled].filter((offset) => offset >= next);
  if (above.length === 0) return '';
  const span = Number(above.reduce((max, offset) => (offset > max ? offset : max)) - next) + 1;
  const bits = Buffer.alloc(Math.ceil(span / 8));
  for (const offset of above) {
    const bit = Number(offset - next);
    bits[bit >> 3]! |= 1 << (bit & 7);
  }
  return `${PREFIX}${bits.toString('base64')}`;
}

/** Reads a committed offset and its metadata back; metadata not written by encodeHandled marks nothing. */
export function decodeProgress(offset: string | null | undefined, metadata: string | null | undefined): PartitionProgress {
  const next = offset === null || offset === undefined || offset === '' || BigInt(offset) < 0n ? null : BigInt(offset);
  const handled = new Set<bigint>();
  if (next !== null && metadata?.startsWith(PREFIX)) {
    const bits = Buffer.from(metadata.slice(PREFIX.length), 'base64');
    for (let bit = 0; bit < bits.length * 8; bit++) if (bits[bit >> 3]! & (1 << (bit & 7))) handled.add(next + BigInt(bit));
  }
  return { next, handled };
}

/**
 * The further along of two readings of a partition's progress: the group's commit as read back, and what this
 * instance last committed itself (the read can lag it while a moved group coordinator loads its offsets).
 */
export function freshestProgress(read: PartitionProgress, own: PartitionProgress | undefined): PartitionProgress {
  if (own === undefined || own.next === null) return read;
  if (read.next === null || own.next > read.next) return own;
  // At the same offset, the commit that marks more records handled above it is the later one.
  return own.next === read.next && own.handled.size > read.handled.size ? own : read;
}

/** Whether a record is handled according to the progress. */
export const isHandled = (progress: PartitionProgress, offset: bigint): boolean => (progress.next !== null && offset < progress.next) || progress.handled.has(offset);

/**
 * The offset to commit after handling some of a batch's records: the lowest record of the batch not handled
 * yet, or one past the batch when all are. `offsets` are the batch's record offsets, ascending.
 */
export function nextToCommit(offsets: readonly bigint[], progress: PartitionProgress): bigint {
  for (const offset of offsets) if (!isHandled(progress, offset)) return offset;
  return offsets[offsets.length - 1]! + 1n;
}

/** Indexes of `priorities` from highest to lowest priority, ties in their original (offset) order. */
export function byPriority(priorities: readonly number[]): number[] {
  return priorities.map((_, i) => i).sort((a, b) => priorities[b]! - priorities[a]! || a - b);
}
