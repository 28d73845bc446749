import { existsSync, statSync } from 'node:fs';
import { sep } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { ConfigError, parseS3Url } from '../../schemas/index.js';
import type { S3StoreOptions } from '../storage/index.js';
import { enableS3Reads, NO_EXTENSION_DOWNLOADS } from './httpfs.js';
import { openLake } from './lake.js';
import { sqlIdent as ident, sqlString } from './sql.js';
import { partitionSuperseded, runFolder, type DataFile } from './layout.js';
import { ANALYTICS_TABLES, duckdbType, LLM_SAMPLE_FIELDS, LLM_TURN_FIELDS, STEP_FIELDS, type AnyTableSpec } from './tables.js';

export interface QueryResult {
  readonly columns: readonly string[];
  /** DuckDB type of each column, e.g. `BIGINT`, `DOUBLE`, `VARCHAR[]` (always set by AnalyticsCatalog.query). */
  readonly types?: readonly string[];
  /** Rows as JSON-safe values (BIGINTs beyond 2^53 become strings). */
  readonly rows: ReadonlyArray<readonly unknown[]>;
}

export { sqlString };

/**
 * Values bound to a query's `$name` placeholders by DuckDB itself: a value is never spliced into the query's text,
 * so no quoting is written by hand for it.
 */
export type QueryParams = Readonly<Record<string, string | number | boolean | null>>;

// One row per step, with the trajectory's identity beside it.
/**
 * 95% Wilson score interval of a pass rate `p` over `n` trials (z = 1.96): it stays inside [0, 1] and is honest
 * at 0% and 100%. Macros, so every notebook and query draws the same intervals.
 */
const WILSON_MACROS = [
  // Wilson's interval always holds p; bounded by it, since at p = 0 or 1 rounding leaves the bound 1e-17 beyond it.
  'CREATE MACRO wilson_low(p, n) AS least(p, greatest(0, (p + 1.9208 / n - 1.96 * sqrt(p * (1 - p) / n + 0.9604 / (n * n))) / (1 + 3.8416 / n)))',
  'CREATE MACRO wilson_high(p, n) AS greatest(p, least(1, (p + 1.9208 / n + 1.96 * sqrt(p * (1 - p) / n + 0.9604 / (n * n))) / (1 + 3.8416 / n)))',
];

/** One live verdict per trajectory: the first that is not a re-scoring. */
const LIVE_VERDICTS_VIEW = `CREATE VIEW live_verdicts AS
  SELECT trajectory_id, arg_min(passed, created_at) AS passed
  FROM verifications
  WHERE rescore_id IS NULL
  GROUP BY trajectory_id`;

/**
 * Pass rate per run and policy version, with what its trajectories are worth as independent ones: several
 * episodes of one task (a group, or a held-out task played twice) are correlated, so `effective_n` is
 * p(1-p) over the rate's cluster-robust variance by task (Kish's design effect; the same rule as the
 * learn report's `effectiveEpisodes`), never above the trajectories. Intervals are `wilson_low(pass_rate, effective_n)`.
 */
const VERSION_PASS_RATES_VIEW = `CREATE VIEW version_pass_rates AS
WITH per_task AS (
  SELECT t.run_id, t.policy_version, t.task_id, count(*)::DOUBLE AS m, sum(CASE WHEN v.passed THEN 1 ELSE 0 END)::DOUBLE AS y
  FROM trajectories t
  JOIN live_verdicts v USING (trajectory_id)
  GROUP BY t.run_id, t.policy_version, t.task_id
),
rates AS (
  SELECT run_id, policy_version, sum(m) AS n, sum(y) AS passes, count(*)::DOUBLE AS k, sum(y) / sum(m) AS p
  FROM per_task
  GROUP BY run_id, policy_version
),
spread AS (
  SELECT r.run_id, r.policy_version, r.n, r.passes, r.k, r.p, sum((t.y - r.p * t.m) ^ 2) AS ss
  FROM rates r
  JOIN per_task t USING (run_id, policy_version)
  GROUP BY r.run_id, r.policy_version, r.n, r.passes, r.k, r.p
)
SELECT run_id, policy_version, n::BIGINT AS trajectories, passes::BIGINT AS passes, k::BIGINT AS tasks, p AS pass_rate,
       CASE WHEN k < 2 OR p = 0 OR p = 1 OR ss = 0 THEN n ELSE least(n, p * (1 - p) / (k / (k - 1) * ss / (n * n))) END AS effective_n
FROM spread`;

const STEPS_VIEW = `CREATE VIEW steps AS
SELECT trajectory_id, task_id, run_id, group_id, policy_id, policy_version, attempt, outcome,
       ${STEP_FIELDS.map((field) => `step.${ident(field.name)} AS ${ident(field.name === 'index' ? 'step_index' : field.name)}`).join(', ')}
FROM (SELECT trajectory_id, task_id, run_id, group_id, policy_id, policy_version, attempt, outcome, unnest(steps) AS step FROM trajectories)`;

// One row per model turn, with the trajectory's identity beside it (the turn's own policy version is `turn_policy_version`).
const LLM_TURNS_VIEW = `CREATE VIEW llm_turns AS
SELECT trajectory_id, task_id, run_id, group_id, policy_id, policy_version, attempt, outcome, env_id,
       ${LLM_TURN_FIELDS.map((field) => `turn.${ident(field.name)} AS ${ident(field.name === 'policy_version' ? 'turn_policy_version' : field.name)}`).join(', ')}
FROM (SELECT trajectory_id, task_id, run_id, group_id, policy_id, policy_version, attempt, outcome, env_id, unnest(llm_turns) AS turn FROM trajectories)`;

/**
 * One row per training sample (the prefix rule, applied by the sink as it lands each trajectory: one
 * implementation, `llmTrainingSamples`, rather than a second one in SQL), with the trajectory's live reward
 * and group advantage: the latest reward that is not a re-scoring's. Trajectories without a reward yet have
 * no sample here. Columns are named as prime-rl/verifiers name them (docs/llm.md).
 */
const TRAINING_SAMPLES_VIEW = `CREATE VIEW training_samples AS
WITH live_reward AS (
  SELECT trajectory_id,
         arg_max(reward, created_at) AS reward,
         arg_max(advantage, created_at) AS advantage,
         arg_max(disposition, created_at) AS disposition,
         arg_max(reward_id, created_at) AS reward_id
  FROM rewards
  WHERE rescore_id IS NULL
  GROUP BY trajectory_id
)
SELECT t.trajectory_id, t.group_id, t.task_id, t.run_id, t.env_id, t.policy_id, t.policy_version, t.attempt,
       ${LLM_SAMPLE_FIELDS.map((field) => `t.sample.${ident(field.name)} AS ${ident(field.name)}`).join(', ')},
       len(t.sample.prompt_ids) AS prompt_tokens, len(t.sample.completion_ids) AS completion_tokens,
       r.reward, r.advantage, r.disposition, r.reward_id
FROM (SELECT trajectory_id, group_id, task_id, run_id, env_id, policy_id, policy_version, attempt, unnest(llm_samples) AS sample FROM trajectories) t
JOIN live_reward r USING (trajectory_id)`;

/**
 * DuckDB over the sink's Parquet folders: one view per table (`trajectories`, `verifications`, `rewards`,
 * `checkpoints`, `tasks`) plus `steps`, one row per step unnested from the trajectories' step lists,
 * `llm_turns`, one row per model turn, and `training_samples`, the LLM samples with their rewards.
 * Views read exactly the live files (files superseded by a compacted one are skipped) and always have
 * the declared columns: a column added to a table later reads as NULL in older files, and a table with
 * no files yet is an empty table of the right shape, so queries work from the first moment of a run.
 */
export interface CatalogOptions {
  /**
   * Only these runs' rows (their folders alone are read). Tasks are shared by runs and never filtered.
   * @default every run
   */
  runIds?: readonly string[];
  /**
   * Refuse a store with nothing to read: a missing folder, one without Parquet files, or a run id with no
   * rows there (each a ConfigError naming the folder). For a user's query, where an empty answer from a
   * wrong folder or a misspelt run would look like a real one. Off for the loop, which opens the catalog
   * before its first file lands.
   * @default false
   */
  requireData?: boolean;
  /** How to reach S3 when the lake is an s3:// URL (DuckDB reads it with httpfs, loaded from its local file). @default resolveS3StoreOptions(): TRIALRUN_S3_URL and the AWS_* variables */
  s3?: S3StoreOptions;
}

/** Tables whose rows belong to a loop run (the tasks table's run is the data job's). */
const PER_RUN_TABLES = new Set(['trajectories', 'verifications', 'rewards', 'checkpoints']);

export class AnalyticsCatalog {
  private constructor(
    private readonly instance: DuckDBInstance,
    private readonly connection: DuckDBConnection,
    /** Live Parquet files per table when the catalog was opened. */
    readonly files: ReadonlyMap<string, readonly string[]>,
  ) {}

  static async open(dataDir: string, options: CatalogOptions = {}): Promise<AnalyticsCatalog> {
    if (options.runIds && options.runIds.length === 0) throw new ConfigError('CatalogOptions.runIds: give at least one run id, or leave it out for every run');
    const lake = openLake(dataDir, 'the analytics lake (--data-dir)', options.s3);
    const listed = new Map<string, DataFile[]>();
    try {
      if (lake.store) await lake.check();
      for (const spec of ANALYTICS_TABLES as readonly AnyTableSpec[]) listed.set(spec.table, partitionSuperseded(await lake.listDataFiles(spec.table)).live);
    } finally {
      lake.close();
    }
    if (options.requireData) requireData(dataDir, listed, options.runIds, lake.store !== null);
    const instance = await DuckDBInstance.create(':memory:', NO_EXTENSION_DOWNLOADS);
    const connection = await instance.connect();
    const files = new Map<string, string[]>();
    try {
      if (lake.store) await enableS3Reads(connection, parseS3Url(dataDir, 'the analytics lake (--data-dir)').bucket, options.s3);
      for (const spec of ANALYTICS_TABLES as readonly AnyTableSpec[]) {
        const runs = PER_RUN_TABLES.has(spec.table) ? options.runIds : undefined;
        const folders = runs && new Set(runs.map(runFolder));
        const live = listed
          .get(spec.table)!
          .filter((file) => !folders || folders.has(runFolderOf(file)))
          .map((file) => file.path)
          .sort();
        files.set(spec.table, live);
        const filter = runs ? ` WHERE run_id IN (${runs.map(sqlString).join(', ')})` : '';
        await connection.run(live.length ? `${await viewOver(connection, spec, live)}${filter}` : emptyTable(spec));
      }
      for (const view of [...WILSON_MACROS, LIVE_VERDICTS_VIEW, VERSION_PASS_RATES_VIEW, STEPS_VIEW, LLM_TURNS_VIEW, TRAINING_SAMPLES_VIEW]) await connection.run(view);
    } catch (error) {
      connection.closeSync();
      instance.closeSync();
      throw error;
    }
    return new AnalyticsCatalog(instance, connection, files);
  }

  /** Runs one statement; `params` are bound to its `$name` placeholders. */
  async query(sql: string, params?: QueryParams): Promise<QueryResult> {
    const reader = await this.connection.runAndReadAll(sql, params === undefined ? undefined : { ...params });
    return { columns: reader.columnNames(), types: reader.columnTypes().map(String), rows: reader.getRowsJson() };
  }

  /** How many statements `sql` holds, by DuckDB's own parser (a parse error throws). */
  async countStatements(sql: string): Promise<number> {
    return (await this.connection.extractStatements(sql)).count;
  }

  /** Runs every statement of `sql` in order and returns each one's result; stops at the first that fails. */
  async queryAll(sql: string): Promise<QueryResult[]> {
    const statements = await this.connection.extractStatements(sql);
    const results: QueryResult[] = [];
    for (let index = 0; index < statements.count; index++) {
      const prepared = await statements.prepare(index);
      try {
        const reader = await prepared.runAndReadAll();
        results.push({ columns: reader.columnNames(), types: reader.columnTypes().map(String), rows: reader.getRowsJson() });
      } finally {
        prepared.destroySync();
      }
    }
    return results;
  }

  /** Runs a statement such as `COPY (...) TO 'file.parquet'`. */
  async run(sql: string): Promise<void> {
    await this.connection.run(sql);
  }

  close(): void {
    this.connection.closeSync();
    this.instance.closeSync();
  }
}

/** The `run_id=<run>` folder a data file sits in. */
const runFolderOf = (file: DataFile): string => file.bucket.split(sep)[0]!.split('/')[0]!;

/** Throws a ConfigError when the store has nothing to read, or a wanted run has no rows in it. */
function requireData(dataDir: string, listed: ReadonlyMap<string, readonly DataFile[]>, runIds: readonly string[] | undefined, remote: boolean): void {
  if (!remote && !existsSync(dataDir)) throw new ConfigError(`no data folder ${dataDir}; run the demo or pass --data-dir`);
  if (!remote && !statSync(dataDir).isDirectory()) throw new ConfigError(`${dataDir} is not a folder; pass the analytics store's folder with --data-dir`);
  const all = [...listed.values()].flat();
  if (all.length === 0) throw new ConfigError(`no Parquet files under ${dataDir}; run the demo or pass --data-dir`);
  if (!runIds) return;
  const present = new Set([...listed].filter(([table]) => PER_RUN_TABLES.has(table)).flatMap(([, files]) => files.map(runFolderOf)));
  const unknown = runIds.filter((runId) => !present.has(runFolder(runId)));
  if (unknown.length === 0) return;
  const known = [...present].map((folder) => folder.replace(/^run_id=/, '')).sort();
  const shown = known.length > 10 ? `${known.slice(0, 10).join(', ')} and ${known.length - 10} more` : known.join(', ');
  throw new ConfigError(`no rows for run ${unknown.map((r) => `"${r}"`).join(', ')} under ${dataDir}; runs there: ${shown || 'none'}`);
}

function emptyTable(spec: AnyTableSpec): string {
  return `CREATE TABLE ${spec.table} (${spec.columns.map((column) => `${ident(column.name)} ${duckdbType(column.type)}`).join(', ')})`;
}

export function readParquetSql(files: readonly string[]): string {
  return `read_parquet([${files.map(sqlString).join(', ')}], union_by_name = true, hive_partitioning = false)`;
}

async function viewOver(connection: DuckDBConnection, spec: AnyTableSpec, files: readonly string[]): Promise<string> {
  const source = readParquetSql(files);
  const described = await connection.runAndReadAll(`DESCRIBE SELECT * FROM ${source}`);
  const present = new Map(described.getRowsJson().map((row) => [String(row[0]), String(row[1])]));
  const declared = new Set(spec.columns.map((column) => column.name));
  const projection = [
    ...spec.columns.map((column) => {
      const type = duckdbType(column.type);
      if (!present.has(column.name)) return `CAST(NULL AS ${type}) AS ${ident(column.name)}`;
      // DuckDB quotes only the struct field names that need it; compare without quotes.
      const same = present.get(column.name)!.replaceAll('"', '') === type.replaceAll('"', '');
      return same ? ident(column.name) : `CAST(${ident(column.name)} AS ${type}) AS ${ident(column.name)}`;
    }),
    // Columns in files but no longer declared stay readable.
    ...[...present.keys()].filter((name) => !declared.has(name)).map(ident),
  ];
  return `CREATE VIEW ${spec.table} AS SELECT ${projection.join(', ')} FROM ${source}`;
}
