import { ConfigError, RewardDisposition } from '../../schemas/index.js';
import type { AnalyticsCatalog } from './catalog.js';
import { sqlString } from './sql.js';

export const SAMPLE_EXPORT_FORMATS = ['parquet', 'jsonl'] as const;
export type SampleExportFormat = (typeof SAMPLE_EXPORT_FORMATS)[number];

export interface SampleExportOptions {
  /** The file to write (replaced when it exists). */
  out: string;
  /**
   * `parquet` (zstd, token arrays as LIST columns) or `jsonl` (one sample an object a line).
   * @default 'parquet'
   */
  format?: SampleExportFormat;
  /**
   * Only samples whose reward has one of these dispositions (`learn` alone for what a trainer should step on).
   * @default every disposition: the advantage of a sample that is not `learn` is 0
   */
  dispositions?: readonly RewardDisposition[];
}

export interface SampleExportReport {
  readonly out: string;
  readonly samples: number;
  readonly trajectories: number;
}

/**
 * Writes the catalog's `training_samples` (the run filter of the catalog applies) to one file, ordered by
 * trajectory and sample. Refuses to write an empty file: a store without LLM token ids, or with no reward
 * for them yet, is named as such.
 */
export async function exportTrainingSamples(catalog: AnalyticsCatalog, options: SampleExportOptions): Promise<SampleExportReport> {
  const format = options.format ?? 'parquet';
  if (!SAMPLE_EXPORT_FORMATS.includes(format)) throw new ConfigError(`SampleExportOptions.format: one of ${SAMPLE_EXPORT_FORMATS.join(', ')}, got "${String(format)}"`);
  const dispositions = options.dispositions;
  if (dispositions && dispositions.length === 0) throw new ConfigError('SampleExportOptions.dispositions: give at least one, or leave it out for every disposition');
  const unknown = (dispositions ?? []).filter((disposition) => !RewardDisposition.options.includes(disposition));
  if (unknown.length) throw new ConfigError(`SampleExportOptions.dispositions: "${unknown.join('", "')}" is none of ${RewardDisposition.options.join(', ')}`);
  const where = dispositions ? `WHERE disposition IN (${dispositions.map(sqlString).join(', ')})` : '';
  const select = `SELECT * FROM training_samples ${where} ORDER BY trajectory_id, sample_index`;
  const counted = await catalog.query(`SELECT count(*)::INTEGER AS samples, count(DISTINCT trajectory_id)::INTEGER AS trajectories FROM (${select})`);
  const [samples, trajectories] = counted.rows[0] as [number, number];
  if (samples === 0) throw new ConfigError(await whyNoSamples(catalog, dispositions));
  const copy = format === 'parquet' ? '(FORMAT parquet, COMPRESSION zstd)' : '(FORMAT json)';
  await catalog.run(`COPY (${select}) TO ${sqlString(options.out)} ${copy}`);
  return { out: options.out, samples, trajectories };
}

async function whyNoSamples(catalog: AnalyticsCatalog, dispositions: readonly RewardDisposition[] | undefined): Promise<string> {
  const result = await catalog.query(
    `SELECT count(*) FILTER (WHERE len(llm_samples) > 0)::INTEGER, count(*)::INTEGER FROM trajectories`,
  );
  const [withTokens, all] = result.rows[0] as [number, number];
  if (withTokens === 0) return `no training samples: none of the ${all} trajectories carries LLM token ids (a run with --policy llm on a server that returns them, docs/llm.md)`;
  const rewarded = await catalog.query('SELECT count(*)::INTEGER FROM training_samples');
  if ((rewarded.rows[0]![0] as number) === 0) return `no training samples: ${withTokens} trajectories carry token ids but none has a reward in the store yet`;
  return `no training samples with disposition ${dispositions!.join(', ')}`;
}
