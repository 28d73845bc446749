import { ConfigError } from '../../../schemas/index.js';
import { DedupColumns, type Split } from './columns.js';
import { RowFingerprinter, type ComparableRow } from './fingerprint.js';
import { keptBits, LshIndex, MinHasher } from './minhash.js';

export type { Split } from './columns.js';

/** What deduplication needs to know about one row. */
export interface DedupKey {
  readonly id: string;
  /** Rows of one family (variants of one problem) are never near-duplicates of each other. */
  readonly family: string;
  readonly split: Split;
  /** Of two duplicates the one with the higher priority stays, then the earlier one. */
  readonly priority: number;
}

export interface DedupOptions {
  /** Estimated Jaccard similarity at or above which two rows are near-duplicates. @default 0.8 */
  threshold?: number;
  /** @default 5 */
  shingleTokens?: number;
  /** @default 128 */
  signatureSize?: number;
  /** @default 'drop-train' */
  contamination?: 'drop-train' | 'drop-eval' | 'fail';
}

export type DedupCategory = 'exact duplicate' | 'near duplicate' | 'contamination';

export interface DedupReject {
  /** Index of the rejected row in the input. */
  readonly index: number;
  readonly category: DedupCategory;
  readonly reason: string;
  /** Index of the row it duplicates (for contamination: the row on the other side of the split). */
  readonly of: number;
  /** Estimated Jaccard similarity of their token shingles; 1 for an exact duplicate. */
  readonly similarity: number;
}

export interface DedupResult {
  /** Indexes of the rows that stay, in input order. */
  readonly kept: number[];
  readonly rejects: DedupReject[];
  readonly exactDuplicates: number;
  readonly nearDuplicates: number;
  /** Train/eval pairs found near-identical (each pair once). */
  readonly contaminationHits: number;
}

/**
 * Exact duplicates (the same content up to whitespace the code does not care about, see `RowFingerprinter`),
 * near-duplicates (MinHash/LSH over shingles of tokens with identifiers renamed to placeholders, within a
 * split and across families), then contamination: any eval row that is a near-duplicate of a train row,
 * whatever the family. Linear in rows: every row is tokenized once and looked up once per pass.
 * `contentOf` gives a row's prose and code; it is called once per row and not kept, so a million rows never
 * hold a second copy of their text. The work is `deduplicateColumns`'s; this fingerprints the rows for it.
 */
export function deduplicate<T>(rows: readonly T[], keyOf: (row: T) => DedupKey, contentOf: (row: T) => ComparableRow, options: DedupOptions = {}): DedupResult {
  const hasher = new MinHasher({ shingleTokens: options.shingleTokens, signatureSize: options.signatureSize });
  const columns = new DedupColumns(hasher.signatureSize);
  const fingerprinter = new RowFingerprinter();
  const signature = new Uint32Array(hasher.signatureSize);
  const kept = new Uint8Array(hasher.signatureSize);
  const ids: string[] = [];
  for (const row of rows) {
    const key = keyOf(row);
    const fingerprint = fingerprinter.fingerprint(contentOf(row));
    hasher.signatureOfTokens(fingerprinter.tokens.buffer, fingerprint.tokenCount, signature);
    columns.add(key, fingerprint.digest, keptBits(signature, kept));
    ids.push(key.id);
  }
  try {
    return deduplicateColumns(columns, (index) => ids[index]!, options);
  } finally {
    columns.close();
  }
}

/**
 * `deduplicate` over rows already fingerprinted into columns (priority, split, family hash, exact key,
 * signature): what the task job runs, its rows' text on disk. `idOf` names a row in reject reasons. Of
 * two duplicates the one with the higher priority stays, then the earlier one.
 */
export function deduplicateColumns(columns: DedupColumns, idOf: (index: number) => string, options: DedupOptions = {}): DedupResult {
  const threshold = options.threshold ?? 0.8;
  const contamination = options.contamination ?? 'drop-train';
  if (!(threshold > 0 && threshold <= 1)) throw new ConfigError(`dedup threshold must be in (0, 1], got ${threshold}`);
  const signatureSize = columns.signatureSize;
  const rowCount = columns.count;
  // LSH item id -> row index, per split.
  const rowOf: Record<Split, number[]> = { train: [], eval: [] };
  // The indexes read their items' signatures from the columns' store rather than holding a copy.
  const indexes: Record<Split, LshIndex> = {
    train: new LshIndex(signatureSize, threshold, rowCount, (id, out) => columns.signatures.readAt(rowOf.train[id]!, out)),
    eval: new LshIndex(signatureSize, threshold, 1024, (id, out) => columns.signatures.readAt(rowOf.eval[id]!, out)),
  };
  const order = new Int32Array(rowCount);
  for (let i = 0; i < rowCount; i++) order[i] = i;
  order.sort((a, b) => columns.priority(b) - columns.priority(a) || a - b);
  // Exact keys: an open-addressing table of the first row with each key (load factor <= 0.5).
  const slots = 1 << Math.max(4, Math.ceil(Math.log2(2 * rowCount + 1)));
  const firstByHash = new Int32Array(slots).fill(-1);
  const rejected = new Uint8Array(rowCount);
  const rejects: DedupReject[] = [];
  const reject = (index: number, category: DedupCategory, reason: string, of: number, similarity: number): void => {
    rejected[index] = 1;
    rejects.push({ index, category, reason, of, similarity });
  };
  let exactDuplicates = 0;
  let nearDuplicates = 0;
  const kept = new Uint8Array(signatureSize);

  for (const index of order) {
    let slot = columns.exactHash(index) & (slots - 1);
    while (firstByHash[slot] !== -1 && !columns.sameExact(firstByHash[slot]!, index)) slot = (slot + 1) & (slots - 1);
    const first = firstByHash[slot]!;
    if (first !== -1) {
      exactDuplicates++;
      reject(index, 'exact duplicate', `exact duplicate of ${idOf(first)} (the same content up to whitespace the code does not care about)`, first, 1);
      continue;
    }
    firstByHash[slot] = index;
    const split = columns.split(index);
    columns.signatures.read(index, kept);
    const index_ = indexes[split];
    const twin = index_.similarKept(kept, threshold).find((hit) => !columns.sameFamily(rowOf[split][hit.id]!, index));
    if (twin) {
      nearDuplicates++;
      const original = rowOf[split][twin.id]!;
      reject(index, 'near duplicate', `near-duplicate of ${idOf(original)} (estimated similarity ${twin.similarity.toFixed(2)}, identifiers renamed alike)`, original, twin.similarity);
      continue;
    }
    rowOf[split][index_.addKept(kept)] = index;
  }

  // Contamination: every surviving train row against the surviving eval rows.
  let contaminationHits = 0;
  const examples: string[] = [];
  if (indexes.eval.count > 0) {
    for (let item = 0; item < indexes.train.count; item++) {
      const trainRow = rowOf.train[item]!;
      const hits = indexes.eval.similarKept(columns.signatures.read(trainRow, kept), threshold);
      if (hits.length === 0) continue;
      contaminationHits += hits.length;
      const evalRows = hits.map((hit) => rowOf.eval[hit.id]!);
      const pair = `train ${idOf(trainRow)} ~ eval ${idOf(evalRows[0]!)} (estimated similarity ${hits[0]!.similarity.toFixed(2)})`;
      if (contamination === 'fail') {
        if (examples.length < 10) examples.push(pair);
      } else if (contamination === 'drop-train') {
        reject(trainRow, 'contamination', `contaminates the eval split: near-duplicate of eval task ${idOf(evalRows[0]!)} (estimated similarity ${hits[0]!.similarity.toFixed(2)})`, evalRows[0]!, hits[0]!.similarity);
      } else {
        hits.forEach((hit, i) => {
          indexes.eval.remove(hit.id);
          reject(evalRows[i]!, 'contamination', `contaminated: near-duplicate of train task ${idOf(trainRow)} (estimated similarity ${hit.similarity.toFixed(2)})`, trainRow, hit.similarity);
        });
      }
    }
  }
  if (contamination === 'fail' && contaminationHits > 0) {
    throw new ConfigError(`${contaminationHits} eval task(s) are near-duplicates of train tasks (dedup.contamination is 'fail'):\n  ${examples.join('\n  ')}`);
  }
  const keptRows: number[] = [];
  for (let i = 0; i < rowCount; i++) if (!rejected[i]) keptRows.push(i);
  return { kept: keptRows, rejects, exactDuplicates, nearDuplicates, contaminationHits };
}
