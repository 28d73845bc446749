import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { hashText, mix32 } from './minhash.js';

export type Split = 'train' | 'eval';

/** Where the rows' MinHash signatures (their kept bits, one byte a value) live: memory, or a file for data sets larger than memory. */
export interface SignatureStore {
  /** Appends row `index`'s signature (rows come in order 0, 1, 2, ...). */
  append(index: number, kept: Uint8Array): void;
  /** Row `index`'s signature into `out`, for reads in row order (a file store reads a block ahead). */
  read(index: number, out: Uint8Array): Uint8Array;
  /** Row `index`'s signature into `out`, for reads in no order (an LSH index's candidates). */
  readAt(index: number, out: Uint8Array): Uint8Array;
  close(): void;
}

/** Signatures in one growing array: for the rows of a test or a small job. */
export class MemorySignatures implements SignatureStore {
  private bytes = new Uint8Array(0);

  constructor(private readonly signatureSize: number) {}

  append(index: number, kept: Uint8Array): void {
    const end = (index + 1) * this.signatureSize;
    if (end > this.bytes.length) {
      const grown = new Uint8Array(Math.max(end, this.bytes.length * 2, 1024 * this.signatureSize));
      grown.set(this.bytes);
      this.bytes = grown;
    }
    this.bytes.set(kept.subarray(0, this.signatureSize), index * this.signatureSize);
  }

  read(index: number, out: Uint8Array): Uint8Array {
    out.set(this.bytes.subarray(index * this.signatureSize, (index + 1) * this.signatureSize));
    return out;
  }

  readAt(index: number, out: Uint8Array): Uint8Array {
    return this.read(index, out);
  }

  close(): void {
    this.bytes = new Uint8Array(0);
  }
}

/** Rows a file of signatures is written and read by at a time. */
const BLOCK_ROWS = 8192;

/**
 * Signatures in a file of fixed-size records, written and read a block at a time: dedup visits rows in
 * priority order, which is file order within each priority, so one cached block serves long runs of reads.
 */
export class FileSignatures implements SignatureStore {
  private readonly fd: number;
  private readonly pending: Buffer;
  private pendingRows = 0;
  private written = 0;
  private readonly block: Buffer;
  private blockIndex = -1;

  constructor(
    readonly path: string,
    private readonly signatureSize: number,
  ) {
    this.fd = openSync(path, 'w+');
    this.pending = Buffer.alloc(BLOCK_ROWS * signatureSize);
    this.block = Buffer.alloc(BLOCK_ROWS * signatureSize);
  }

  append(index: number, kept: Uint8Array): void {
    if (index !== this.written + this.pendingRows) throw new Error(`signature ${index} appended out of order (next is ${this.written + this.pendingRows})`);
    this.pending.set(kept.subarray(0, this.signatureSize), this.pendingRows * this.signatureSize);
    if (++this.pendingRows === BLOCK_ROWS) this.flush();
  }

  read(index: number, out: Uint8Array): Uint8Array {
    if (index >= this.written) this.flush();
    const blockIndex = Math.floor(index / BLOCK_ROWS);
    if (blockIndex !== this.blockIndex) {
      readSync(this.fd, this.block, 0, this.block.length, blockIndex * this.block.length);
      this.blockIndex = blockIndex;
    }
    const start = (index % BLOCK_ROWS) * this.signatureSize;
    out.set(this.block.subarray(start, start + this.signatureSize));
    return out;
  }

  readAt(index: number, out: Uint8Array): Uint8Array {
    if (index >= this.written) this.flush();
    if (Math.floor(index / BLOCK_ROWS) === this.blockIndex) return this.read(index, out);
    const record = Buffer.from(out.buffer, out.byteOffset, this.signatureSize);
    const got = readSync(this.fd, record, 0, this.signatureSize, index * this.signatureSize);
    if (got !== this.signatureSize) throw new Error(`signature file ${this.path}: signature ${index} is cut short`);
    return out;
  }

  close(): void {
    closeSync(this.fd);
  }

  private flush(): void {
    if (this.pendingRows === 0) return;
    writeSync(this.fd, this.pending, 0, this.pendingRows * this.signatureSize, this.written * this.signatureSize);
    this.written += this.pendingRows;
    this.pendingRows = 0;
    this.blockIndex = -1;
  }
}

/** A second, independent 32-bit hash of a string (murmur3's finaliser per UTF-16 unit), so a family is told apart by 64 bits. */
function secondHash(text: string): number {
  let hash = 0x9747b28c;
  for (let i = 0; i < text.length; i++) hash = mix32(hash ^ text.charCodeAt(i));
  return hash;
}

/**
 * What dedup needs of every row, in typed arrays: priority, split, the family as a 64-bit hash, the first
 * 128 bits of the exact key (sha256), and the MinHash signature in a `SignatureStore`. Some 30 bytes a row
 * besides the signature, so the rows' text can stay on disk.
 */
export class DedupColumns {
  private size = 0;
  private priorities = new Int32Array(1024);
  private splits = new Uint8Array(1024);
  private families = new Uint32Array(2 * 1024);
  private exacts = new Uint32Array(4 * 1024);

  constructor(
    readonly signatureSize: number,
    readonly signatures: SignatureStore = new MemorySignatures(signatureSize),
  ) {}

  get count(): number {
    return this.size;
  }

  /** Adds a row; `exact` is its exact key's digest (at least 16 bytes), `kept` its signature's kept bits. Returns its index. */
  add(row: { readonly priority: number; readonly split: Split; readonly family: string }, exact: Uint8Array, kept: Uint8Array): number {
    if (this.size === this.priorities.length) this.grow();
    const index = this.size++;
    this.priorities[index] = row.priority;
    this.splits[index] = row.split === 'eval' ? 1 : 0;
    this.families[2 * index] = hashText(row.family);
    this.families[2 * index + 1] = secondHash(row.family);
    const view = new DataView(exact.buffer, exact.byteOffset, 16);
    for (let lane = 0; lane < 4; lane++) this.exacts[4 * index + lane] = view.getUint32(4 * lane);
    this.signatures.append(index, kept);
    return index;
  }

  priority(index: number): number {
    return this.priorities[index]!;
  }

  split(index: number): Split {
    return this.splits[index] ? 'eval' : 'train';
  }

  sameFamily(a: number, b: number): boolean {
    return this.families[2 * a] === this.families[2 * b] && this.families[2 * a + 1] === this.families[2 * b + 1];
  }

  /** The same exact key in the same split: what dedup calls an exact duplicate. */
  sameExact(a: number, b: number): boolean {
    if (this.splits[a] !== this.splits[b]) return false;
    for (let lane = 0; lane < 4; lane++) if (this.exacts[4 * a + lane] !== this.exacts[4 * b + lane]) return false;
    return true;
  }

  /** Whether row `index` has the exact key whose digest is `exact`, whatever the split (the validate stage's check that a reused id carries the same row). */
  hasContent(index: number, exact: Uint8Array): boolean {
    const view = new DataView(exact.buffer, exact.byteOffset, 16);
    for (let lane = 0; lane < 4; lane++) if (this.exacts[4 * index + lane] !== view.getUint32(4 * lane)) return false;
    return true;
  }

  /** 32 bits of the exact key and split, for a hash table. */
  exactHash(index: number): number {
    return (this.exacts[4 * index]! ^ Math.imul(this.splits[index]! + 1, 0x9e3779b1)) >>> 0;
  }

  /** Bytes held per row, signatures in memory included when they are there. */
  get bytesPerRow(): number {
    return this.priorities.BYTES_PER_ELEMENT + 1 + 8 + 16 + (this.signatures instanceof MemorySignatures ? this.signatureSize : 0);
  }

  close(): void {
    this.signatures.close();
  }

  private grow(): void {
    const capacity = this.priorities.length * 2;
    const grown = <T extends Int32Array | Uint8Array | Uint32Array>(array: T, make: (length: number) => T, width: number): T => {
      const next = make(capacity * width);
      next.set(array);
      return next;
    };
    this.priorities = grown(this.priorities, (n) => new Int32Array(n), 1);
    this.splits = grown(this.splits, (n) => new Uint8Array(n), 1);
    this.families = grown(this.families, (n) => new Uint32Array(n), 2);
    this.exacts = grown(this.exacts, (n) => new Uint32Array(n), 4);
  }
}
