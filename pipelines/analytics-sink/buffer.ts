import type { EncodedOutput } from '../runtime/index.js';

/** The rows of one folder (run, hour), as the pieces of the lines its file is written from (RecordLines). */
export interface Bucket {
  readonly runId: string;
  readonly pieces: Buffer[];
  rows: number;
}

/** What one flush lands: one offset range of a topic partition, its rows by folder and its dead letters. */
export interface FlushBatch {
  readonly topic: string;
  readonly partition: number;
  readonly first: bigint;
  readonly last: bigint;
  readonly buckets: ReadonlyMap<string, Bucket>;
  readonly deadLetters: readonly EncodedOutput[];
  readonly rows: number;
}

/**
 * The records of one topic partition read since its last flush: checked records as the lines their rows
 * are written from (flat buffers, nothing for the garbage collector to trace), grouped by the folder (run,
 * hour) they land in, the dead letters of records that could not be decoded, and the offset range they
 * all came from. A flush writes the whole buffer as one offset range, so a file never holds part of
 * a range whose other rows are elsewhere unwritten.
 */
export class PartitionBuffer {
  readonly buckets = new Map<string, Bucket>();
  readonly deadLetters: EncodedOutput[] = [];
  first: bigint | null = null;
  last = -1n;
  bytes = 0;
  rows = 0;
  /** When the oldest buffered record arrived (ms since the epoch); null while empty. */
  openedAt: number | null = null;

  constructor(
    readonly topic: string,
    readonly partition: number,
  ) {}

  get empty(): boolean {
    return this.first === null;
  }

  addRow(folder: string, runId: string, line: readonly Buffer[]): void {
    let bucket = this.buckets.get(folder);
    if (!bucket) {
      bucket = { runId, pieces: [], rows: 0 };
      this.buckets.set(folder, bucket);
    }
    bucket.pieces.push(...line);
    bucket.rows++;
    this.rows++;
  }

  /** Extends the range over a consumed record, whether it became a row, a dead letter or nothing (a tombstone). */
  consumed(offset: bigint, bytes: number, deadLetters: readonly EncodedOutput[], now: number): void {
    if (offset <= this.last) throw new Error(`${this.topic}[${this.partition}]: offset ${offset} arrived after ${this.last}`);
    if (this.first === null) {
      this.first = offset;
      this.openedAt = now;
    }
    this.last = offset;
    this.bytes += bytes;
    this.deadLetters.push(...deadLetters);
  }

  /** Size or age says the buffer should become files now. */
  due(now: number, rollBytes: number, rollAgeMs: number): boolean {
    return !this.empty && (this.bytes >= rollBytes || now - (this.openedAt ?? now) >= rollAgeMs);
  }

  /**
   * Hands over everything buffered as one batch to land, and starts empty again. The last offset read
   * stays, so a record delivered again (a batch retried) is still refused while the batch lands.
   */
  detach(): FlushBatch {
    if (this.first === null) throw new Error(`${this.topic}[${this.partition}]: nothing buffered to detach`);
    const batch: FlushBatch = { topic: this.topic, partition: this.partition, first: this.first, last: this.last, buckets: new Map(this.buckets), deadLetters: [...this.deadLetters], rows: this.rows };
    const last = this.last;
    this.clear();
    this.last = last;
    return batch;
  }

  clear(): void {
    this.buckets.clear();
    this.deadLetters.length = 0;
    this.first = null;
    this.last = -1n;
    this.bytes = 0;
    this.rows = 0;
    this.openedAt = null;
  }
}
