import { ConfigError } from '../../../schemas/index.js';
import { RowFingerprinter, type ComparableRow } from './fingerprint.js';
import { LshIndex, MinHasher } from './minhash.js';

export type Split = 'train' | 'eval';

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
 * hold a second copy of their text.
 */
export function deduplicate<T>(rows: readonly T[], keyOf: (row: T) => DedupKey, contentOf: (row: T) => ComparableRow, options: DedupOptions = {}): DedupResult {
  const threshold = options.threshold ?? 0.8;
  const contamination = options.contamination ?? 'drop-train';
  if (!(threshold > 0 && threshold <= 1)) throw new ConfigError(`dedup threshold must be in (0, 1], got ${threshold}`);
  const hasher = new MinHasher({ shingleTokens: options.shingleTokens, signatureSize: options.signatureSize });
  const indexes: Record<Split, LshIndex> = {
    train: new LshIndex(hasher.signatureSize, threshold, rows.length),
    eval: new LshIndex(hasher.signatureSize, threshold, 1024),
  };
  // LSH item id -> row index, per split.
  const rowOf: Record<Split, number[]> = { train: [], eval: [] };
  const keys = rows.map(keyOf);
  const order = keys.map((_, i) => i).sort((a, b) => keys[b]!.priority - keys[a]!.priority || a - b);
  const firstByHash = new Map<string, number>();
  const rejected = new Uint8Array(rows.length);
  const rejects: DedupReject[] = [];
  const reject = (index: number, category: DedupCategory, reason: string, of: number, similarity: number): void => {
    rejected[index] = 1;
    rejects.push({ index, category, reason, of, similarity });
  };
  const fingerprinter = new RowFingerprinter();
  let exactDuplicates = 0;
  let nearDuplicates = 0;
  const signature = new Uint32Array(hasher.signatureSize);

  for (const index of order) {
    const key = keys[index]!;
    const fingerprint = fingerprinter.fingerprint(contentOf(rows[index]!));
    const hash = `${key.split}:${fingerprint.exact}`;
    const first = firstByHash.get(hash);
    if (first !== undefined) {
      exactDuplicates++;
      reject(index, 'exact duplicate', `exact duplicate of ${keys[first]!.id} (the same content up to whitespace the code does not care about)`, first, 1);
      continue;
    }
    firstByHash.set(hash, index);
    hasher.signatureOfTokens(fingerprinter.tokens.buffer, fingerprint.tokenCount, signature);
    const index_ = indexes[key.split];
    const twin = index_.similar(signature, threshold).find((hit) => keys[rowOf[key.split][hit.id]!]!.family !== key.family);
    if (twin) {
      nearDuplicates++;
      const original = rowOf[key.split][twin.id]!;
      reject(index, 'near duplicate', `near-duplicate of ${keys[original]!.id} (estimated similarity ${twin.similarity.toFixed(2)}, identifiers renamed alike)`, original, twin.similarity);
      continue;
    }
    rowOf[key.split][index_.add(signature)] = index;
  }

  // Contamination: every surviving train row against the surviving eval rows.
  let contaminationHits = 0;
  const examples: string[] = [];
  if (indexes.eval.count > 0) {
    for (let item = 0; item < indexes.train.count; item++) {
      const trainRow = rowOf.train[item]!;
      const hits = indexes.eval.similar(indexes.train.signatureOf(item, signature), threshold);
      if (hits.length === 0) continue;
      contaminationHits += hits.length;
      const evalRows = hits.map((hit) => rowOf.eval[hit.id]!);
      const pair = `train ${keys[trainRow]!.id} ~ eval ${keys[evalRows[0]!]!.id} (estimated similarity ${hits[0]!.similarity.toFixed(2)})`;
      if (contamination === 'fail') {
        if (examples.length < 10) examples.push(pair);
      } else if (contamination === 'drop-train') {
        reject(trainRow, 'contamination', `contaminates the eval split: near-duplicate of eval task ${keys[evalRows[0]!]!.id} (estimated similarity ${hits[0]!.similarity.toFixed(2)})`, evalRows[0]!, hits[0]!.similarity);
      } else {
        hits.forEach((hit, i) => {
          indexes.eval.remove(hit.id);
          reject(evalRows[i]!, 'contamination', `contaminated: near-duplicate of train task ${keys[trainRow]!.id} (estimated similarity ${hit.similarity.toFixed(2)})`, trainRow, hit.similarity);
        });
      }
    }
  }
  if (contamination === 'fail' && contaminationHits > 0) {
    throw new ConfigError(`${contaminationHits} eval task(s) are near-duplicates of train tasks (dedup.contamination is 'fail'):\n  ${examples.join('\n  ')}`);
  }
  const kept: number[] = [];
  for (let i = 0; i < rows.length; i++) if (!rejected[i]) kept.push(i);
  return { kept, rejects, exactDuplicates, nearDuplicates, contaminationHits };
}
