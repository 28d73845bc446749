import { closeSync, fsyncSync, mkdirSync, mkdtempSync, openSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { ConfigError, errorMessage } from '../../schemas/index.js';
import { sqlString } from './sql.js';
import { duckdbType, type Column, type ColumnType, type ScalarType } from './tables.js';

/** Writes bytes under a temporary name, flushes them to disk, then renames: readers never see half a file. */
export function writeFileAtomically(path: string, bytes: Uint8Array | string): void {
  mkdirSync(dirname(path), { recursive: true });
  const temp = `${path}.tmp-${process.pid}`;
  const fd = openSync(temp, 'w');
  try {
    writeSync(fd, typeof bytes === 'string' ? Buffer.from(bytes) : bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
}

function fsyncFile(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

const STAGING_SLICE_CHARS = 8 * 1024 * 1024;
/**
 * The largest row DuckDB's JSON reader takes. A row is one topic record, which the broker caps at 1 MiB
 * by default; a larger bound costs DuckDB's reader time on every batch (it sizes its buffers by it).
 */
const MAX_ROW_JSON_BYTES = 16 * 1024 * 1024;

/** Key-value metadata of a Parquet file (DuckDB: `parquet_kv_metadata(file)`). */
export type ParquetMetadata = Readonly<Record<string, string>>;

const kvMetadataSql = (metadata: ParquetMetadata): string => `{${Object.entries(metadata).map(([key, value]) => `${sqlString(key)}: ${sqlString(value)}`).join(', ')}}`;

type Cell = (value: unknown) => unknown;
/** `YYYY-MM-DDTHH:MM:SS.sssZ` with a day every month has: exactly what `toISOString` writes for it. */
const CANONICAL_UTC_MS = /^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1\d|2[0-8])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/;
const isNull = (value: unknown): value is null | undefined => value === null || value === undefined;

/**
 * How a value of each type goes into a JSON line, checked: DuckDB reads the line with the column's type,
 * and a value it cannot take would fail the whole file, so it fails here, for its own record, naming the
 * column. int64 values beyond 2^53 go as digit strings (DuckDB casts them exactly); times go as ISO text
 * in UTC with milliseconds, the precision of the TIMESTAMP columns, whatever form they came in.
 */
const SCALAR_CELLS: Record<ScalarType, (column: string) => Cell> = {
  utf8: () => (value) => (isNull(value) || typeof value === 'string' ? value : String(value)),
  int64: (column) => (value) => {
    if (isNull(value)) return value;
    if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
    if (typeof value === 'number' && Number.isInteger(value)) return value;
    throw new TypeError(`column "${column}": ${String(value)} is not a whole number`);
  },
  int32: (column) => (value) => {
    if (isNull(value)) return value;
    const number = typeof value === 'bigint' ? Number(value) : value;
    if (typeof number === 'number' && Number.isInteger(number) && number >= -(2 ** 31) && number < 2 ** 31) return number;
    throw new TypeError(`column "${column}": ${String(value)} is not a 32-bit whole number`);
  },
  float64: () => (value) => (isNull(value) ? value : Number(value)),
  bool: (column) => (value) => {
    if (isNull(value) || typeof value === 'boolean') return value;
    throw new TypeError(`column "${column}": ${String(value)} is not true or false`);
  },
  timestamp: (column) => (value) => {
    if (isNull(value)) return value;
    // Most times already come in the form written here (zod's ISO date-time, UTC, milliseconds): they go
    // as they are, sparing a parse and a format per step. Days 29 to 31 take the slow path, which checks them.
    if (typeof value === 'string' && CANONICAL_UTC_MS.test(value)) return value;
    const ms = typeof value === 'string' ? Date.parse(value) : Number(value);
    if (!Number.isFinite(ms)) throw new TypeError(`column "${column}": "${String(value)}" is not a time`);
    return new Date(ms).toISOString();
  },
};

function cellFor(type: ColumnType, column: string): Cell {
  if (typeof type === 'string') return SCALAR_CELLS[type](column);
  const list = (item: Cell, name = column): Cell => (value) => {
    if (isNull(value)) return value;
    if (!Array.isArray(value)) throw new TypeError(`column "${name}": expected a list`);
    return value.map(item);
  };
  if (typeof type.listOf === 'string') return list(SCALAR_CELLS[type.listOf](`${column}[]`));
  const fields = type.listOf.map((field) => {
    const name = `${column}[].${field.name}`;
    return { name: field.name, cell: typeof field.type === 'string' ? SCALAR_CELLS[field.type](name) : list(SCALAR_CELLS[field.type.listOf](`${name}[]`), name) };
  });
  return list((item) => {
    if (isNull(item)) return item;
    const struct: Record<string, unknown> = {};
    for (const field of fields) struct[field.name] = field.cell((item as Record<string, unknown>)[field.name]);
    return struct;
  });
}

/**
 * Turns rows of one table into the JSON lines its Parquet files are written from: each line an object of
 * the table's columns, by name. Made once per table; a line can be built as soon as its record is
 * decoded, so a buffer holds flat strings rather than record objects for the garbage collector to trace.
 */
export class JsonRowEncoder<R> {
  private readonly cells: readonly Cell[];

  constructor(readonly columns: readonly Column<R>[]) {
    this.cells = columns.map((column) => cellFor(column.type, column.name));
  }

  encode(row: R): string {
    const line: Record<string, unknown> = {};
    for (let c = 0; c < this.columns.length; c++) line[this.columns[c]!.name] = this.cells[c]!(this.columns[c]!.value(row));
    return JSON.stringify(line);
  }
}

export interface ParquetWriterOptions {
  /**
   * DuckDB threads that read the staged rows and encode Parquet. The sink writes in the background while
   * its consumer decodes on: one thread leaves the consumer its core.
   * @default DuckDB's own: one per core
   */
  threads?: number;
}

/**
 * The analytics store's one Parquet writer, for the sink's row batches and compaction's merges alike:
 * DuckDB's `COPY ... (FORMAT parquet, COMPRESSION zstd)`, whose encoder runs natively, on its own
 * threads. Rows reach it as newline-delimited JSON (one `JSON.stringify` per row, the fastest way from
 * JavaScript objects into DuckDB; see JsonRowEncoder), staged in a file of the writer's own and read
 * back with the table's declared column types, so a column that is null in every row still has its
 * type. Every file is written under a temporary name, fsynced, then renamed: a reader or a crashed
 * writer never leaves or sees a half-written file under the final name.
 */
export class ParquetWriter {
  private constructor(
    private readonly instance: DuckDBInstance,
    private readonly connection: DuckDBConnection,
    /** Where row batches are staged as JSON; a folder of this writer's own, removed on close. */
    private readonly stagingDir: string,
  ) {}

  /** Row batches staged so far: names each staging file. */
  private staged = 0;

  static async open(options: ParquetWriterOptions = {}): Promise<ParquetWriter> {
    const threads = options.threads ?? null;
    if (threads !== null && (!Number.isInteger(threads) || threads < 1)) throw new ConfigError(`ParquetWriterOptions.threads must be a whole number >= 1, got ${threads}`);
    const instance = await DuckDBInstance.create(':memory:', threads === null ? {} : { threads: String(threads) });
    const connection = await instance.connect();
    return new ParquetWriter(instance, connection, mkdtempSync(join(tmpdir(), 'trialrun-parquet-')));
  }

  /**
   * Writes rows as one Parquet file with the given columns, in row order.
   * @returns the file's size in bytes
   */
  async writeRows<R>(path: string, columns: readonly Column<R>[], rows: readonly R[], metadata: ParquetMetadata = {}): Promise<number> {
    const encoder = new JsonRowEncoder(columns);
    const lines = rows.map((row, index) => {
      try {
        return encoder.encode(row);
      } catch (error) {
        throw new TypeError(`row ${index}: ${errorMessage(error)}`, { cause: error });
      }
    });
    return this.writeJsonRows(path, columns, lines, metadata);
  }

  /**
   * Writes rows already encoded by a JsonRowEncoder of the same columns as one Parquet file, in order.
   * @returns the file's size in bytes
   */
  async writeJsonRows(path: string, columns: readonly Column<never>[], lines: readonly string[], metadata: ParquetMetadata = {}): Promise<number> {
    const staged = join(this.stagingDir, `rows-${++this.staged}.json`);
    try {
      stage(staged, lines);
      const types = `{${columns.map((column) => `${sqlString(column.name)}: ${sqlString(duckdbType(column.type))}`).join(', ')}}`;
      return await this.writeQuery(path, `SELECT * FROM read_json(${sqlString(staged)}, format = 'newline_delimited', columns = ${types}, maximum_object_size = ${MAX_ROW_JSON_BYTES})`, metadata);
    } finally {
      rmSync(staged, { force: true });
    }
  }

  /**
   * Writes the result of a query (for example `SELECT * FROM read_parquet([...])`) as one Parquet file.
   * @returns the file's size in bytes
   */
  async writeQuery(path: string, select: string, metadata: ParquetMetadata = {}): Promise<number> {
    mkdirSync(dirname(path), { recursive: true });
    const temp = `${path}.tmp-${process.pid}`;
    try {
      const kv = Object.keys(metadata).length ? `, KV_METADATA ${kvMetadataSql(metadata)}` : '';
      await this.connection.run(`COPY (${select}) TO ${sqlString(temp)} (FORMAT parquet, COMPRESSION zstd${kv})`);
      fsyncFile(temp);
      renameSync(temp, path);
    } catch (error) {
      rmSync(temp, { force: true });
      throw error;
    }
    return statSync(path).size;
  }

  close(): void {
    this.connection.closeSync();
    this.instance.closeSync();
    rmSync(this.stagingDir, { recursive: true, force: true });
  }
}

/** JSON lines to a file, written in slices so no one string grows with the batch. */
function stage(file: string, lines: readonly string[]): void {
  const fd = openSync(file, 'w');
  try {
    let slice = '';
    for (const line of lines) {
      slice += `${line}\n`;
      if (slice.length >= STAGING_SLICE_CHARS) {
        writeSync(fd, slice);
        slice = '';
      }
    }
    if (slice) writeSync(fd, slice);
  } finally {
    closeSync(fd);
  }
}

/** Writes rows as one Parquet file through a writer of its own; for a few files (tests, fixtures), not a stream of them. */
export async function writeParquetRows<R>(path: string, columns: readonly Column<R>[], rows: readonly R[], metadata: ParquetMetadata = {}): Promise<number> {
  const writer = await ParquetWriter.open();
  try {
    return await writer.writeRows(path, columns, rows, metadata);
  } finally {
    writer.close();
  }
}
