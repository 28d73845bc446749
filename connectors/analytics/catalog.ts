import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { ANALYTICS_TABLES, DUCKDB_TYPES } from './tables.js';

export interface QueryResult {
  readonly columns: readonly string[];
  /** Rows as JSON-safe values (BIGINTs beyond 2^53 become strings). */
  readonly rows: ReadonlyArray<readonly unknown[]>;
}

function hasParquet(dir: string): boolean {
  if (!existsSync(dir)) return false;
  return readdirSync(dir).some((entry) => {
    const path = join(dir, entry);
    return entry.endsWith('.parquet') || (statSync(path).isDirectory() && hasParquet(path));
  });
}

const sqlString = (text: string): string => `'${text.replaceAll("'", "''")}'`;

// One row per step, unnested from the trajectories' JSON step lists.
const STEPS_VIEW = `CREATE VIEW steps AS
SELECT t.trajectory_id, t.task_id, t.run_id, t.policy_version, t.attempt,
       CAST(s.j->>'index' AS INTEGER) AS step_index,
       s.j->'toolCall'->>'name' AS tool,
       CAST(s.j->'toolResult'->>'ok' AS BOOLEAN) AS ok,
       CAST(s.j->>'durationMs' AS DOUBLE) AS duration_ms,
       CAST(s.j->>'sandboxMs' AS DOUBLE) AS sandbox_ms,
       s.j->>'observation' AS observation,
       CAST(s.j->'decision'->>'candidates' AS INTEGER) AS candidates
FROM trajectories t, unnest(json_transform(t.steps, '["JSON"]')) AS s(j)`;

/**
 * DuckDB over the sink's Parquet folders: one view per table (`trajectories`, `steps`, `verifications`,
 * `rewards`, `checkpoints`). A table with no files yet is an empty table of the right shape, so queries
 * work from the first moment of a run.
 */
export class AnalyticsCatalog {
  private constructor(
    private readonly instance: DuckDBInstance,
    private readonly connection: DuckDBConnection,
  ) {}

  static async open(dataDir: string): Promise<AnalyticsCatalog> {
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    for (const spec of ANALYTICS_TABLES) {
      const dir = join(dataDir, spec.table);
      if (hasParquet(dir)) {
        await connection.run(`CREATE VIEW ${spec.table} AS SELECT * FROM read_parquet(${sqlString(join(dir, '**', '*.parquet'))}, union_by_name = true)`);
      } else {
        const columns = spec.columns.map((column) => `"${column.name}" ${DUCKDB_TYPES[column.type]}`).join(', ');
        await connection.run(`CREATE TABLE ${spec.table} (${columns})`);
      }
    }
    await connection.run(STEPS_VIEW);
    return new AnalyticsCatalog(instance, connection);
  }

  async query(sql: string): Promise<QueryResult> {
    const reader = await this.connection.runAndReadAll(sql);
    return { columns: reader.columnNames(), rows: reader.getRowsJson() };
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
