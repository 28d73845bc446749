import { join, sep } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { ConfigError } from '../../schemas/index.js';
import { listDataFiles, partitionSuperseded, runFolder } from './layout.js';
import { ANALYTICS_TABLES, duckdbType, STEP_FIELDS, type AnyTableSpec } from './tables.js';

export interface QueryResult {
  readonly columns: readonly string[];
  /** DuckDB type of each column, e.g. `BIGINT`, `DOUBLE`, `VARCHAR[]` (always set by AnalyticsCatalog.query). */
  readonly types?: readonly string[];
  /** Rows as JSON-safe values (BIGINTs beyond 2^53 become strings). */
  readonly rows: ReadonlyArray<readonly unknown[]>;
}

export const sqlString = (text: string): string => `'${text.replaceAll("'", "''")}'`;
const ident = (name: string): string => `"${name.replaceAll('"', '""')}"`;

// One row per step, with the trajectory's identity beside it.
const STEPS_VIEW = `CREATE VIEW steps AS
SELECT trajectory_id, task_id, run_id, group_id, policy_id, policy_version, attempt, outcome,
       ${STEP_FIELDS.map((field) => `step.${ident(field.name)} AS ${ident(field.name === 'index' ? 'step_index' : field.name)}`).join(', ')}
FROM (SELECT trajectory_id, task_id, run_id, group_id, policy_id, policy_version, attempt, outcome, unnest(steps) AS step FROM trajectories)`;

/**
 * DuckDB over the sink's Parquet folders: one view per table (`trajectories`, `verifications`, `rewards`,
 * `checkpoints`, `tasks`) plus `steps`, one row per step unnested from the trajectories' step lists.
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
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    const files = new Map<string, string[]>();
    try {
      for (const spec of ANALYTICS_TABLES as readonly AnyTableSpec[]) {
        const runs = PER_RUN_TABLES.has(spec.table) ? options.runIds : undefined;
        const folders = runs && new Set(runs.map(runFolder));
        const live = partitionSuperseded(listDataFiles(join(dataDir, spec.table)))
          .live.filter((file) => !folders || folders.has(file.bucket.split(sep)[0]!))
          .map((file) => file.path)
          .sort();
        files.set(spec.table, live);
        const filter = runs ? ` WHERE run_id IN (${runs.map(sqlString).join(', ')})` : '';
        await connection.run(live.length ? `${await viewOver(connection, spec, live)}${filter}` : emptyTable(spec));
      }
      await connection.run(STEPS_VIEW);
    } catch (error) {
      connection.closeSync();
      instance.closeSync();
      throw error;
    }
    return new AnalyticsCatalog(instance, connection, files);
  }

  async query(sql: string): Promise<QueryResult> {
    const reader = await this.connection.runAndReadAll(sql);
    return { columns: reader.columnNames(), types: reader.columnTypes().map(String), rows: reader.getRowsJson() };
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
