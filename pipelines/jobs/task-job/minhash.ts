import { wholeNumber } from '../../../schemas/index.js';
/**
 * Near-duplicate detection in linear time: MinHash signatures by one-permutation hashing (one hash per
 * shingle, not one per shingle and permutation) with optimal densification for empty bins (Shrivastava,
 * "Optimal Densification for Fast and Accurate Minwise Hashing", ICML 2017), and an LSH index over bands
 * of the signature built from typed arrays, keeping 8 bits of each value, so a million rows cost a few hundred megabytes.
 */

const FNV_OFFSET = 0x811c9dc5 | 0;
const FNV_PRIME = 0x01000193;
const SHINGLE_BASE = 0x01000193 * 31 + 7;

/** murmur3's finaliser: a well-mixed 32-bit hash of a 32-bit value. */
export function mix32(value: number): number {
  let h = value >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const isWordChar = (code: number): boolean =>
  (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 95 || code > 127;
const isSpace = (code: number): boolean => code === 32 || (code >= 9 && code <= 13);

/** FNV-1a over a string's UTF-16 units: the hash of one token. */
export function hashText(text: string): number {
  let hash = FNV_OFFSET;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), FNV_PRIME);
  return hash;
}

/** A growable buffer of token hashes. */
export interface TokenBuffer {
  buffer: Int32Array;
}

/** Appends `hash` at `count` in `out`, growing it as needed; returns the new count. */
export function pushToken(out: TokenBuffer, count: number, hash: number): number {
  if (count === out.buffer.length) {
    const grown = new Int32Array(out.buffer.length * 2);
    grown.set(out.buffer);
    out.buffer = grown;
  }
  out.buffer[count] = hash;
  return count + 1;
}

/**
 * Hashes of the text's tokens, in order, into `out` from position `from` (grown as needed); returns the
 * count after them. Runs of letters, digits and `_` (any non-ASCII character counts as a letter) are one
 * token, every other non-space character is a token of its own. No substrings are made. For prose; code
 * is tokenized as Python (`pytokens.ts`).
 */
export function tokenHashes(text: string, out: TokenBuffer = { buffer: new Int32Array(256) }, from = 0): number {
  let count = from;
  const push = (hash: number): void => {
    count = pushToken(out, count, hash);
  };
  let hash = FNV_OFFSET;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (isWordChar(code)) {
      hash = Math.imul(hash ^ code, FNV_PRIME);
      inWord = true;
      continue;
    }
    if (inWord) {
      push(hash);
      hash = FNV_OFFSET;
      inWord = false;
    }
    if (!isSpace(code)) push(Math.imul(FNV_OFFSET ^ code, FNV_PRIME));
  }
  if (inWord) push(hash);
  return count;
}

export interface MinHasherOptions {
  /** Tokens per shingle. @default 5 */
  shingleTokens?: number;
  /** Signature length (bins). @default 128 */
  signatureSize?: number;
}

/** Computes MinHash signatures of texts over their token shingles. */
export class MinHasher {
  readonly shingleTokens: number;
  readonly signatureSize: number;
  private readonly tokens = { buffer: new Int32Array(1024) };
  private readonly bins: Uint32Array;
  private readonly filled: Uint8Array;

  constructor(options: MinHasherOptions = {}) {
    this.shingleTokens = options.shingleTokens ?? 5;
    this.signatureSize = options.signatureSize ?? 128;
    wholeNumber('MinHasherOptions.shingleTokens', this.shingleTokens, { min: 1 });
    wholeNumber('MinHasherOptions.signatureSize', this.signatureSize, { min: 2 });
    this.bins = new Uint32Array(this.signatureSize);
    this.filled = new Uint8Array(this.signatureSize);
  }

  /** Writes the signature of `text` (tokenized as prose, see `tokenHashes`) into `out` (length signatureSize). */
  signature(text: string, out: Uint32Array = new Uint32Array(this.signatureSize)): Uint32Array {
    return this.signatureOfTokens(this.tokens.buffer, tokenHashes(text, this.tokens), out);
  }

  /** Writes the signature of the first `count` token hashes in `tokens` into `out` (length signatureSize). */
  signatureOfTokens(tokens: Int32Array, count: number, out: Uint32Array = new Uint32Array(this.signatureSize)): Uint32Array {
    const k = this.signatureSize;
    const bins = this.bins;
    const filled = this.filled;
    bins.fill(0xffffffff);
    filled.fill(0);
    const width = Math.min(this.shingleTokens, Math.max(1, count));
    // A polynomial rolling hash of `width` consecutive token hashes: one multiply-add per shingle.
    let lead = 1; // SHINGLE_BASE^(width-1)
    for (let j = 1; j < width; j++) lead = Math.imul(lead, SHINGLE_BASE);
    let rolling = 0;
    for (let j = 0; j < width && j < count; j++) rolling = (Math.imul(rolling, SHINGLE_BASE) + tokens[j]!) | 0;
    const shingles = Math.max(1, count - width + 1);
    for (let i = 0; i < shingles; i++) {
      if (i > 0) rolling = (Math.imul((rolling - Math.imul(tokens[i - 1]!, lead)) | 0, SHINGLE_BASE) + tokens[i + width - 1]!) | 0;
      const shingle = mix32(rolling ^ width);
      // One permutation: the shingle's hash picks its bin, an independent hash of it is its value there.
      const bin = shingle % k;
      const value = mix32(shingle ^ 0x5bd1e995);
      if (value < bins[bin]!) bins[bin] = value;
      filled[bin] = 1;
    }
    for (let bin = 0; bin < k; bin++) {
      if (filled[bin]) {
        out[bin] = bins[bin]!;
        continue;
      }
      // Optimal densification: an empty bin borrows from the first filled bin a bin-specific hash sequence
      // lands on, which keeps the collision probability equal to the Jaccard similarity.
      let attempt = 1;
      let source = mix32(bin * 0x9e3779b1 + attempt) % k;
      while (!filled[source] && attempt < 64 * k) {
        attempt++;
        source = mix32(bin * 0x9e3779b1 + attempt) % k;
      }
      out[bin] = filled[source] ? bins[source]! : 0;
    }
    return out;
  }
}

/** Fraction of equal positions: the MinHash estimate of the Jaccard similarity of two shingle sets. */
export function estimateSimilarity(a: Uint32Array, b: Uint32Array, aOffset = 0, bOffset = 0, length = a.length - aOffset): number {
  let equal = 0;
  for (let i = 0; i < length; i++) if (a[aOffset + i] === b[bOffset + i]) equal++;
  return equal / length;
}

/**
 * Bands and rows per band for an LSH index whose candidate curve 1-(1-s^r)^b best separates pairs above
 * `threshold` from those below it (equal weight on the missed and the spurious area), as datasketch does.
 */
export function lshParameters(threshold: number, signatureSize: number): { bands: number; rows: number } {
  const area = (bands: number, rows: number, from: number, to: number, missed: boolean): number => {
    const steps = 200;
    let sum = 0;
    for (let i = 0; i < steps; i++) {
      const s = from + ((i + 0.5) * (to - from)) / steps;
      const p = 1 - (1 - s ** rows) ** bands;
      sum += missed ? 1 - p : p;
    }
    return (sum * (to - from)) / steps;
  };
  let best = { bands: 1, rows: signatureSize, error: Infinity };
  for (let bands = 1; bands <= signatureSize; bands++) {
    const rows = Math.floor(signatureSize / bands);
    const error = 0.5 * area(bands, rows, 0, threshold, false) + 0.5 * area(bands, rows, threshold, 1, true);
    if (error < best.error) best = { bands, rows, error };
  }
  return { bands: best.bands, rows: best.rows };
}

/** Bits of each MinHash value an LshIndex keeps (b-bit minwise hashing). */
const KEPT_BITS = 8;
/** The bits of each value of `signature` an LshIndex keeps, into `out` (what a spill file stores, 1 byte a value). */
export function keptBits(signature: Uint32Array, out: Uint8Array = new Uint8Array(signature.length)): Uint8Array {
  for (let i = 0; i < signature.length; i++) out[i] = signature[i]! >>> (32 - KEPT_BITS);
  return out;
}

/** The chance that two different values agree in their kept bits: what the estimate is corrected by. */
const CHANCE_AGREEMENT = 2 ** -KEPT_BITS;

/**
 * An LSH index of signatures: each band of `rows` values hashes to a 32-bit key; per band an
 * open-addressing table maps the key to the newest item with it, and a `next` array chains older ones.
 * Items are dense ids 0..n-1 in insertion order; memory is a few words per item per band.
 *
 * Of each signature value it keeps the top 8 bits (b-bit minwise hashing: Li and König, "b-Bit Minwise
 * Hashing", WWW 2010), a quarter of the memory of whole values, which is what lets tens of millions of rows
 * be indexed: two values that differ agree in their top bits with chance 1/256, so the fraction of agreeing
 * positions m estimates the Jaccard similarity as (m - 1/256) / (1 - 1/256), with the variance of a whole
 * signature's estimate to within a fraction of a percent. Band keys are hashes of the kept bits, so a
 * signature read back from one index (`signatureOf`) finds the same items in another.
 */
export class LshIndex {
  readonly bands: number;
  readonly rows: number;
  private size = 0;
  private capacity: number;
  /** The kept bits of every item's signature, signatureSize bytes per item; empty when they live outside (`signatureAt`). */
  private signatures: Uint8Array;
  /** A query's kept bits. */
  private readonly scratch: Uint8Array;
  /** A candidate's kept bits, read from outside. */
  private readonly candidate: Uint8Array;
  /** Each item's key in each band: what the tables are probed by, and rebuilt from when they grow. */
  private itemKeys: Uint32Array;
  private tableHeads: Int32Array;
  private tableSlots: number;
  private next: Int32Array;
  private removed: Uint8Array;
  private stamp: Uint32Array;
  private query = 0;

  /**
   * `signatureAt`, when given, reads item `id`'s kept bits from where the caller keeps them (a file of
   * signatures, say) into `out`, and the index holds none itself: 128 bytes an item less, a read per candidate.
   */
  constructor(
    readonly signatureSize: number,
    threshold: number,
    initialCapacity = 1024,
    private readonly signatureAt?: (id: number, out: Uint8Array) => Uint8Array,
  ) {
    ({ bands: this.bands, rows: this.rows } = lshParameters(threshold, signatureSize));
    this.capacity = Math.max(16, initialCapacity);
    this.signatures = new Uint8Array(signatureAt ? 0 : this.capacity * signatureSize);
    this.scratch = new Uint8Array(signatureSize);
    this.candidate = new Uint8Array(signatureSize);
    this.tableSlots = LshIndex.slotsFor(this.capacity);
    this.itemKeys = new Uint32Array(this.capacity * this.bands);
    this.tableHeads = new Int32Array(this.tableSlots * this.bands).fill(-1);
    this.next = new Int32Array(this.capacity * this.bands).fill(-1);
    this.removed = new Uint8Array(this.capacity);
    this.stamp = new Uint32Array(this.capacity);
  }

  /** Table slots per band for `capacity` items: a power of two, at most 80% full, so probes stay short. */
  private static slotsFor(capacity: number): number {
    return 1 << Math.ceil(Math.log2(capacity * 1.25));
  }

  get count(): number {
    return this.size;
  }

  /** Bytes the index holds per item it has room for (signature, band keys and chains, tables, flags). */
  get bytesPerItem(): number {
    return (this.signatures.byteLength + this.itemKeys.byteLength + this.tableHeads.byteLength + this.next.byteLength + this.removed.byteLength + this.stamp.byteLength) / this.capacity;
  }

  /** Adds a signature; returns its item id. */
  add(signature: Uint32Array): number {
    return this.addKept(keptBits(signature, this.scratch));
  }

  /** Adds a signature already cut to its kept bits (`keptBits`); returns its item id. */
  addKept(kept: Uint8Array): number {
    if (this.size === this.capacity) this.grow();
    const id = this.size++;
    if (!this.signatureAt) this.signatures.set(kept.subarray(0, this.signatureSize), id * this.signatureSize);
    for (let band = 0; band < this.bands; band++) this.link(band, this.bandKey(kept, 0, band), id);
    return id;
  }

  /** Item `id`'s signature as this index keeps it (its kept bits in place, the rest zero), into `out`. */
  signatureOf(id: number, out: Uint32Array = new Uint32Array(this.signatureSize)): Uint32Array {
    if (!(id >= 0 && id < this.size)) throw new RangeError(`no item ${id} in an index of ${this.size}`);
    const [kept, base] = this.keptOf(id);
    for (let i = 0; i < this.signatureSize; i++) out[i] = (kept[base + i]! << (32 - KEPT_BITS)) >>> 0;
    return out;
  }

  /** Where item `id`'s kept bits are: this index's array and their offset, or the candidate buffer read from outside. */
  private keptOf(id: number): [Uint8Array, number] {
    return this.signatureAt ? [this.signatureAt(id, this.candidate), 0] : [this.signatures, id * this.signatureSize];
  }

  /** Takes an item out of future query results (its slots stay, it is skipped). */
  remove(id: number): void {
    this.removed[id] = 1;
  }

  /**
   * Items sharing at least one band with `signature` whose estimated similarity is at least `threshold`,
   * each once, most similar first.
   */
  similar(signature: Uint32Array, threshold: number): Array<{ id: number; similarity: number }> {
    return this.similarKept(keptBits(signature, this.scratch), threshold);
  }

  /** `similar` for a signature already cut to its kept bits (`keptBits`). */
  similarKept(kept: Uint8Array, threshold: number): Array<{ id: number; similarity: number }> {
    const found: Array<{ id: number; similarity: number }> = [];
    const k = this.signatureSize;
    this.query = (this.query + 1) >>> 0 || 1;
    for (let band = 0; band < this.bands; band++) {
      const key = this.bandKey(kept, 0, band);
      for (let id = this.head(band, key); id >= 0; id = this.next[id * this.bands + band]!) {
        if (this.stamp[id] === this.query || this.removed[id]) continue;
        this.stamp[id] = this.query;
        // Sharing one band is only a candidate; the whole signature decides.
        let equal = 0;
        const [other, base] = this.keptOf(id);
        for (let i = 0; i < k; i++) if (kept[i] === other[base + i]) equal++;
        const similarity = Math.max(0, (equal / k - CHANCE_AGREEMENT) / (1 - CHANCE_AGREEMENT));
        if (similarity >= threshold) found.push({ id, similarity });
      }
    }
    return found.sort((a, b) => b.similarity - a.similarity);
  }

  private bandKey(kept: Uint8Array, base: number, band: number): number {
    let h = mix32(band + 1);
    const start = base + band * this.rows;
    for (let i = start; i < start + this.rows; i++) h = mix32(h ^ kept[i]!);
    return h;
  }

  private slotOf(band: number, key: number): number {
    const mask = this.tableSlots - 1;
    const base = band * this.tableSlots;
    let slot = key & mask;
    for (let head = this.tableHeads[base + slot]!; head !== -1 && this.itemKeys[head * this.bands + band] !== key; head = this.tableHeads[base + slot]!) slot = (slot + 1) & mask;
    return base + slot;
  }

  private head(band: number, key: number): number {
    return this.tableHeads[this.slotOf(band, key)]!;
  }

  private link(band: number, key: number, id: number): void {
    const slot = this.slotOf(band, key);
    this.itemKeys[id * this.bands + band] = key;
    this.next[id * this.bands + band] = this.tableHeads[slot]!;
    this.tableHeads[slot] = id;
  }

  private grow(): void {
    const capacity = this.capacity * 2;
    const grown = <T extends Uint8Array | Uint32Array>(array: T, length: number, make: (length: number) => T): T => {
      const bigger = make(length);
      bigger.set(array);
      return bigger;
    };
    if (!this.signatureAt) this.signatures = grown(this.signatures, capacity * this.signatureSize, (n) => new Uint8Array(n));
    this.removed = grown(this.removed, capacity, (n) => new Uint8Array(n));
    this.stamp = grown(this.stamp, capacity, (n) => new Uint32Array(n));
    const keys = this.itemKeys;
    this.itemKeys = new Uint32Array(capacity * this.bands);
    this.capacity = capacity;
    // Rebuild the tables at the larger size from the items' band keys.
    this.tableSlots = LshIndex.slotsFor(capacity);
    this.tableHeads = new Int32Array(this.tableSlots * this.bands).fill(-1);
    this.next = new Int32Array(capacity * this.bands).fill(-1);
    for (let id = 0; id < this.size; id++) {
      for (let band = 0; band < this.bands; band++) this.link(band, keys[id * this.bands + band]!, id);
    }
  }
}
