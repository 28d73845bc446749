import { appendFileSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { ConfigError } from '../../schemas/index.js';

export interface SourceLine {
  /** 1-based line number in the file. */
  readonly line: number;
  readonly text: string;
  /** Whether DuckDB's JSON parser accepts the line. */
  readonly validJson: boolean;
}

/**
 * Reads a JSON Lines file through DuckDB, keeping every line with its number, so that a bad line becomes
 * a reject with its position instead of failing the whole read.
 */
export async function readJsonLines(path: string): Promise<SourceLine[]> {
  const absolute = resolve(path);
  if (!existsSync(absolute)) throw new ConfigError(`task file ${absolute} does not exist`);
  if (statSync(absolute).size === 0) throw new ConfigError(`task file ${absolute} is empty`);
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    const reader = await connection.runAndReadAll(
      `SELECT CAST(l.i AS INTEGER) AS line, l.text, coalesce(json_valid(l.text), false) AS valid
       FROM (SELECT unnest(lines) AS text, unnest(generate_series(1, len(lines))) AS i
             FROM (SELECT string_split(content, chr(10)) AS lines FROM read_text($path))) AS l
       WHERE trim(l.text) <> ''
       ORDER BY l.i`,
      { path: absolute },
    );
    return reader.getRowsJS().map(([line, text, valid]) => ({ line: Number(line), text: String(text), validJson: Boolean(valid) }));
  } catch (error) {
    throw new ConfigError(`reading ${absolute} failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

export interface Reject {
  readonly source: string;
  readonly line: number;
  readonly reason: string;
}

/** Appends rejects as JSON Lines, one per rejected row, so nothing is dropped silently. */
export class RejectsFile {
  count = 0;

  constructor(readonly path: string) {
    mkdirSync(dirname(path), { recursive: true });
  }

  add(reject: Reject): void {
    appendFileSync(this.path, `${JSON.stringify(reject)}\n`);
    this.count++;
  }
}
