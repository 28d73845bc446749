import { hashText, mix32 } from './minhash.js';

/** Share of the table's slots in use before it doubles. */
const MAX_LOAD = 0.6;

/**
 * The valid rows' ids, by row index, and the first row of each distinct id. A job of millions of rows
 * holds them as bytes in one arena and row indexes in one open-addressing table (some 20 bytes a row),
 * where an array of strings and a Map of them took about 90.
 */
export class IdTable {
  private arena: Buffer = Buffer.alloc(1 << 16);
  private used = 0;
  /** Where row i's id starts in the arena; it ends where row i + 1's starts. */
  private starts = new Uint32Array(1 << 12);
  private rows = 0;
  /** Per slot: the first row with an id of this hash, or -1. */
  private slots = new Int32Array(1 << 12).fill(-1);
  private hashes = new Uint32Array(1 << 12);
  private distinct_ = 0;

  /** Rows added. */
  get length(): number {
    return this.rows;
  }

  /** Distinct ids among them. */
  get distinct(): number {
    return this.distinct_;
  }

  /** Row `index`'s id. */
  at(index: number): string {
    if (index < 0 || index >= this.rows) throw new RangeError(`no row ${index} among ${this.rows}`);
    return this.arena.toString('utf8', this.starts[index]!, index + 1 < this.rows ? this.starts[index + 1]! : this.used);
  }

  /** The first row with this id, if any. */
  first(id: string): number | undefined {
    const row = this.slots[this.slotOf(id, mix32(hashText(id)))]!;
    return row === -1 ? undefined : row;
  }

  /** The slot holding the first row of `id`, or the empty slot where it would go. */
  private slotOf(id: string, hash: number): number {
    const mask = this.slots.length - 1;
    let slot = hash & mask;
    while (this.slots[slot] !== -1 && !(this.hashes[slot] === hash && this.at(this.slots[slot]!) === id)) slot = (slot + 1) & mask;
    return slot;
  }

  /** Appends the next row's id; returns its row index. The first row of an id is the one `first` finds. */
  add(id: string): number {
    const index = this.rows;
    const bytes = Buffer.byteLength(id);
    if (this.used + bytes > 0xffffffff) throw new RangeError('ids take more than 4 GiB');
    if (this.used + bytes > this.arena.length) this.arena = grown(this.arena, this.used + bytes);
    if (index === this.starts.length) {
      const starts = new Uint32Array(this.starts.length * 2);
      starts.set(this.starts);
      this.starts = starts;
    }
    this.starts[index] = this.used;
    this.used += this.arena.write(id, this.used);
    this.rows++;
    const hash = mix32(hashText(id));
    if (this.slots[this.slotOf(id, hash)] !== -1) return index;
    if (this.distinct_ + 1 > this.slots.length * MAX_LOAD) this.rehash(this.slots.length * 2);
    const slot = this.slotOf(id, hash);
    this.slots[slot] = index;
    this.hashes[slot] = hash;
    this.distinct_++;
    return index;
  }

  private rehash(size: number): void {
    const { slots, hashes } = this;
    this.slots = new Int32Array(size).fill(-1);
    this.hashes = new Uint32Array(size);
    const mask = size - 1;
    for (let old = 0; old < slots.length; old++) {
      if (slots[old] === -1) continue;
      let slot = hashes[old]! & mask;
      while (this.slots[slot] !== -1) slot = (slot + 1) & mask;
      this.slots[slot] = slots[old]!;
      this.hashes[slot] = hashes[old]!;
    }
  }
}

function grown(buffer: Buffer, needed: number): Buffer {
  const next = Buffer.alloc(Math.max(needed, buffer.length * 2));
  buffer.copy(next);
  return next;
}
