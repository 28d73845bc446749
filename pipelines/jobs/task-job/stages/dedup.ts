import { deduplicateColumns, type DedupCategory, type DedupResult } from '../dedup.js';
import { Stage, type JobRun } from './stage.js';
import type { ValidatedRows } from './validate.js';

/** One row dropped by dedup, and the row it duplicates: what `--dry-run` lists. */
export interface DuplicateRecord {
  readonly category: DedupCategory;
  readonly source: string;
  readonly row: number;
  readonly taskId: string;
  /** The row that stays (for contamination: the one across the split). */
  readonly of: { readonly source: string; readonly row: number; readonly taskId: string };
  /** Estimated similarity of their token shingles; 1 for exact duplicates. */
  readonly similarity: number;
}

/** dedup: exact duplicates, near-duplicates and eval contamination, over whatever the rows are (problems before derivation), from their columns. */
export function dedupRows(run: JobRun, rows: ValidatedRows): { kept: number[]; dedup: DedupResult; duplicates: DuplicateRecord[] } {
  const { job, rejects } = run;
  const { spec } = job;
  const dedupStage = new Stage('dedup', rows.count);
  const dedup = deduplicateColumns(rows.columns, (index) => rows.ids.at(index), {
    threshold: spec.dedup.nearDuplicateThreshold,
    shingleTokens: spec.dedup.shingleTokens,
    signatureSize: spec.dedup.signatureSize,
    contamination: spec.dedup.contamination,
  });
  const duplicates = dedup.rejects.map((reject): DuplicateRecord => {
    const item = rows.item(reject.index);
    const other = rows.item(reject.of);
    dedupStage.count(reject.category);
    rejects.add({ source: item.source, row: item.row, stage: 'dedup', reason: reject.reason, taskId: rows.ids.at(reject.index) });
    return { category: reject.category, source: item.source, row: item.row, taskId: rows.ids.at(reject.index), of: { source: other.source, row: other.row, taskId: rows.ids.at(reject.of) }, similarity: reject.similarity };
  });
  dedupStage.notes.push(`${dedup.exactDuplicates} exact and ${dedup.nearDuplicates} near duplicate(s), ${dedup.contaminationHits} contamination hit(s)`);
  run.stages.push(dedupStage.end(dedup.kept.length));
  return { kept: dedup.kept, dedup, duplicates };
}
