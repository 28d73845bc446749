import { closeSync, mkdirSync, openSync, readSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/** Bytes of lines held before they are written out. */
const WRITE_BUFFER_BYTES = 4 << 20;

/**
 * Values written once as JSON lines to a file and read back by index: what lets the task job keep its rows'
 * text on disk while it deduplicates them from their columns. Memory per value is its offset and length
 * (12 bytes). The file is the caller's to remove (it lives in the job's temporary folder).
 */
export class SpillFile<T> {
  private readonly fd: number;
  private size = 0;
  private offsets = new Float64Array(1024);
  private lengths = new Uint32Array(1024);
  private end = 0;
  private readonly lines: LineBuffer;
  private window = Buffer.alloc(1 << 20);
  private windowStart = 0;
  private windowBytes = 0;
  /** Index of the value read last: a read past it is taken for reading forward. */
  private lastRead = -1;

  constructor(readonly path: string) {
    this.fd = openSync(path, 'w+');
    this.lines = new LineBuffer(this.fd, WRITE_BUFFER_BYTES);
  }

  get count(): number {
    return this.size;
  }

  /** Appends a value; returns its index. */
  add(value: T): number {
    return this.addLine(JSON.stringify(value));
  }

  /** Appends a value already written as JSON (on one line); returns its index. */
  addLine(json: string): number {
    const bytes = this.lines.add(json);
    if (this.size === this.offsets.length) {
      const offsets = new Float64Array(this.size * 2);
      offsets.set(this.offsets);
      this.offsets = offsets;
      const lengths = new Uint32Array(this.size * 2);
      lengths.set(this.lengths);
      this.lengths = lengths;
    }
    this.offsets[this.size] = this.end;
    this.lengths[this.size] = bytes;
    this.end += bytes + 1;
    return this.size++;
  }

  /**
   * Value `index`. Reads forward go through a window of the file read ahead, so reading values in file order
   * (what build does with the rows dedup kept) costs one system call per window, not one per value. A value
   * before the one read last (dedup's "duplicate of" rows, met between forward reads) is read alone and
   * leaves the window where it is: refilling 1 MiB for it, and again for the next value forward, made
   * dedup's report copy megabytes per duplicate.
   */
  read(index: number): T {
    if (!(index >= 0 && index < this.size)) throw new RangeError(`no value ${index} in a spill file of ${this.size}`);
    if (this.lines.pending) this.lines.flush();
    const offset = this.offsets[index]!;
    const length = this.lengths[index]!;
    const forward = index > this.lastRead;
    this.lastRead = index;
    if (offset >= this.windowStart && offset + length <= this.windowStart + this.windowBytes) {
      const start = offset - this.windowStart;
      return JSON.parse(this.window.toString('utf8', start, start + length)) as T;
    }
    if (!forward) return JSON.parse(this.readAt(Buffer.allocUnsafe(length), offset, index).toString('utf8')) as T;
    if (length > this.window.length) this.window = Buffer.alloc(length);
    this.windowStart = offset;
    this.windowBytes = 0; // a read that fails leaves no window over bytes it did not read
    this.windowBytes = this.readAt(this.window, offset, index).length;
    return JSON.parse(this.window.toString('utf8', 0, length)) as T;
  }

  /** Fills `into` from `offset` (as much as the file holds); the bytes read, at least value `index`'s. */
  private readAt(into: Buffer, offset: number, index: number): Buffer {
    const read = readSync(this.fd, into, 0, into.length, offset);
    if (read < this.lengths[index]!) throw new Error(`spill file ${this.path}: value ${index} is cut short (${read} of ${this.lengths[index]} bytes)`);
    return into.subarray(0, read);
  }

  close(): void {
    closeSync(this.fd);
  }

}

/** Values appended as JSON lines to a new file, written out a buffer at a time. */
export class JsonLinesWriter {
  private readonly fd: number;
  private readonly lines: LineBuffer;

  constructor(
    readonly path: string,
    bufferBytes = WRITE_BUFFER_BYTES,
  ) {
    mkdirSync(dirname(path), { recursive: true });
    this.fd = openSync(path, 'w');
    this.lines = new LineBuffer(this.fd, bufferBytes);
  }

  add(value: unknown): void {
    this.lines.add(JSON.stringify(value));
  }

  close(): void {
    this.lines.flush();
    closeSync(this.fd);
  }
}

/**
 * Lines appended to a file through one reused buffer: each is encoded as UTF-8 straight into it, and the
 * buffer is written out when full. Joining the pending lines into one string and encoding that made two
 * more copies of every byte (a tenth of the task job's time went to its spill and output files).
 */
class LineBuffer {
  private readonly buffer: Buffer;
  private used = 0;
  /** Bytes written to the file so far: where the next flush writes. */
  private written = 0;

  constructor(
    private readonly fd: number,
    bytes: number,
  ) {
    this.buffer = Buffer.allocUnsafe(bytes);
  }

  /** Whether some lines are not in the file yet. */
  get pending(): boolean {
    return this.used > 0;
  }

  /** Appends `line` and a line break; returns the line's length in bytes (without the break). */
  add(line: string): number {
    // A UTF-16 unit takes at most 3 bytes of UTF-8: most lines are known to fit without measuring them.
    let room = this.buffer.length - this.used;
    if (3 * line.length + 1 > room) {
      const bytes = Buffer.byteLength(line);
      if (bytes + 1 > room) {
        this.flush();
        room = this.buffer.length;
      }
      if (bytes + 1 > room) {
        this.write(Buffer.from(`${line}\n`));
        return bytes;
      }
    }
    const bytes = this.buffer.write(line, this.used);
    this.buffer[this.used + bytes] = NEWLINE;
    this.used += bytes + 1;
    return bytes;
  }

  flush(): void {
    this.write(this.buffer.subarray(0, this.used));
    this.used = 0;
  }

  private write(bytes: Buffer): void {
    for (let done = 0; done < bytes.length; ) done += writeSync(this.fd, bytes, done, bytes.length - done, this.written + done);
    this.written += bytes.length;
  }
}

const NEWLINE = 0x0a;
