import { isUtf8 } from 'node:buffer';
import { closeSync, fsyncSync, mkdirSync, mkdtempSync, openSync, renameSync, rmSync, statSync, writeSync, writevSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { contractJsonSchema, errorMessage, TOPICS, wholeNumber } from '../../schemas/index.js';
import { duckdbRecordType } from './record-type.js';
import { sqlIdent as ident, sqlString } from './sql.js';
import { duckdbType, isDerived, type ColumnType, type DerivedColumn, type Row, type ScalarType, type SourceMeta, type TableSpec } from './tables.js';

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

/** Buffers per writev call: at most IOV_MAX (1024 on Linux). */
const STAGING_SLICE_PIECES = 1024;
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

/** A column whose value a function computes (a table's derived columns). */
export type ValueColumn<R> = Pick<DerivedColumn<R>, 'name' | 'type' | 'value'>;

/**
 * Turns values computed in JavaScript (a table's derived columns) into a JSON object of the columns, by
 * name, each value checked against its column's type and written as DuckDB reads that type.
 */
export class JsonRowEncoder<R> {
  private readonly cells: readonly Cell[];

  constructor(readonly columns: readonly ValueColumn<R>[]) {
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
 * How one table's records become the JSON lines its Parquet files are written from: each line holds the
 * record's source (`m`), its derived columns (`d`, when it needs them) and the record's own JSON bytes as
 * they were written (`r`), never printed again from a parsed object. DuckDB's JSON reader then parses `r`
 * natively with the type the contract's JSON Schema gives (duckdbRecordType), and the table's SQL columns
 * make the row from it. Made once per table.
 */
export class RecordLines<R> {
  private readonly derived: readonly DerivedColumn<R>[];
  private readonly encoder: JsonRowEncoder<R>;
  /** The SELECT over a staged file (`?` for its path) that makes the table's rows. */
  private readonly select: string;

  constructor(readonly spec: TableSpec<R>) {
    this.derived = spec.columns.filter(isDerived);
    this.encoder = new JsonRowEncoder(this.derived);
    const recordType = duckdbRecordType(contractJsonSchema(TOPICS[spec.topic].schema));
    const sources: Record<string, string> = { m: 'STRUCT(topic VARCHAR, "partition" BIGINT, "offset" BIGINT)', r: recordType };
    if (this.derived.length > 0) sources.d = `STRUCT(${this.derived.map((column) => `${ident(column.name)} ${duckdbType(column.type)}`).join(', ')})`;
    const projection = spec.columns.map((column) => {
      const value = isDerived(column) ? (column.otherwise === undefined ? `d.${ident(column.name)}` : `coalesce(d.${ident(column.name)}, ${column.otherwise})`) : column.sql;
      return `CAST(${value} AS ${duckdbType(column.type)}) AS ${ident(column.name)}`;
    });
    const columns = `{${Object.entries(sources).map(([name, type]) => `${name}: ${sqlString(type)}`).join(', ')}}`;
    this.select = `SELECT ${projection.join(', ')} FROM read_json(?, format = 'newline_delimited', columns = ${columns}, maximum_object_size = ${MAX_ROW_JSON_BYTES})`;
  }

  /**
   * The line of a record read from the wire, as the pieces to stage in order: `input` parsed from `json`
   * and checked against the contract. The record's bytes are not copied: the line holds them as they
   * came (a buffer holds a partition's records until they land anyway). `parse` gives zod's record,
   * called only when a derived column needs it.
   */
  line(input: unknown, json: Buffer, meta: SourceMeta, parse: (input: unknown) => R): readonly Buffer[] {
    let derived = '';
    if (this.derived.some((column) => column.needs(input))) derived = `,"d":${this.encoder.encode(parse(input))}`;
    // A record written with line breaks between its tokens would break the staged file's lines; bytes that
    // are not UTF-8, or a lone UTF-16 surrogate (JSON allows its escape), the whole file: DuckDB's text is
    // UTF-8. Such records are printed again, as JavaScript read them, with U+FFFD for what UTF-8 cannot hold.
    const reprint = json.includes(0x0a) || !isUtf8(json) || (SURROGATE_ESCAPES.some((escape) => json.includes(escape)) && hasLoneSurrogate(input));
    const body = reprint ? Buffer.from(JSON.stringify(input, wellFormed)) : json;
    return [Buffer.from(`{"m":{"topic":${JSON.stringify(meta.topic)},"partition":${meta.partition},"offset":${meta.offset}}${derived},"r":`), body, LINE_END];
  }

  /** The line of a record already in zod's form (fixtures, tests, jobs that hold records). */
  rowLine(row: Row<R>): readonly Buffer[] {
    return this.line(row.record, Buffer.from(JSON.stringify(row.record)), row.meta, () => row.record);
  }

  /** The pieces of `line`s with every record printed again from its parsed JSON (see ParquetWriter.writeLines). */
  reprinted(pieces: readonly Buffer[]): Buffer[] {
    // A line is three pieces: its head, the record, its end.
    return pieces.map((piece, index) => (index % 3 === 1 ? Buffer.from(JSON.stringify(JSON.parse(piece.toString('utf8')), wellFormed)) : piece));
  }

  selectFrom(staged: string): string {
    return this.select.replace('read_json(?', `read_json(${sqlString(staged)}`);
  }
}

const LINE_END = Buffer.from('}\n');
/** How DuckDB words an error in the JSON it read (malformed text, a value its type refuses). */
const DUCKDB_REFUSED_INPUT = /^(Invalid Input|Conversion) Error/;
/** How a surrogate's escape starts in JSON text (`\ud800` to `\udfff`, either case): a quick test before the walk. */
const SURROGATE_ESCAPES = [Buffer.from('\\ud'), Buffer.from('\\uD')];
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
/** Replaces each lone surrogate with U+FFFD, as a UTF-8 encoder does. */
const wellFormed = (_key: string, value: unknown): unknown => (typeof value === 'string' ? value.replace(LONE_SURROGATE, '\ufffd') : value);

function hasLoneSurrogate(value: unknown): boolean {
  if (typeof value === 'string') {
    LONE_SURROGATE.lastIndex = 0;
    return LONE_SURROGATE.test(value);
  }
  if (typeof value !== 'object' || value === null) return false;
  for (const item of Array.isArray(value) ? value : Object.values(value)) if (hasLoneSurrogate(item)) return true;
  return false;
}

const recordLines = new WeakMap<TableSpec<never>, RecordLines<never>>();

/** The table's RecordLines, made once. */
export function recordLinesOf<R>(spec: TableSpec<R>): RecordLines<R> {
  let lines = recordLines.get(spec as TableSpec<never>) as RecordLines<R> | undefined;
  if (!lines) {
    lines = new RecordLines(spec);
    recordLines.set(spec as TableSpec<never>, lines as RecordLines<never>);
  }
  return lines;
}

/**
 * The analytics store's one Parquet writer, for the sink's record batches and compaction's merges alike:
 * DuckDB's `COPY ... (FORMAT parquet, COMPRESSION zstd)`, whose JSON reader and Parquet encoder run
 * natively, on its own threads. Records reach it as lines of their own JSON bytes (see RecordLines),
 * staged in a file of the writer's own; each column is cast to its declared type, so a column that is
 * null in every row still has its type. Every file is written under a temporary name, fsynced, then
 * renamed: a reader or a crashed writer never leaves or sees a half-written file under the final name.
 */
export class ParquetWriter {
  private constructor(
    private readonly instance: DuckDBInstance,
    private readonly connection: DuckDBConnection,
    /** Where record batches are staged as JSON lines; a folder of this writer's own, removed on close. */
    private readonly stagingDir: string,
  ) {}

  /** Record batches staged so far: names each staging file. */
  private staged = 0;

  static async open(options: ParquetWriterOptions = {}): Promise<ParquetWriter> {
    const threads = options.threads ?? null;
    if (threads !== null) wholeNumber('ParquetWriterOptions.threads', threads, { min: 1 });
    const instance = await DuckDBInstance.create(':memory:', threads === null ? {} : { threads: String(threads) });
    const connection = await instance.connect();
    return new ParquetWriter(instance, connection, mkdtempSync(join(tmpdir(), 'trialrun-parquet-')));
  }

  /**
   * Writes records (zod's form, with their source) as one Parquet file of the table, in order.
   * @returns the file's size in bytes
   */
  async writeRows<R>(path: string, spec: TableSpec<R>, rows: readonly Row<R>[], metadata: ParquetMetadata = {}): Promise<number> {
    const lines = recordLinesOf(spec);
    return this.writeLines(
      path,
      spec,
      rows.flatMap((row, index) => {
        try {
          return lines.rowLine(row);
        } catch (error) {
          throw new TypeError(`row ${index}: ${errorMessage(error)}`, { cause: error });
        }
      }),
      metadata,
    );
  }

  /**
   * Writes lines made by the table's RecordLines (their pieces, in order) as one Parquet file.
   * @returns the file's size in bytes
   */
  async writeLines<R>(path: string, spec: TableSpec<R>, pieces: readonly Buffer[], metadata: ParquetMetadata = {}): Promise<number> {
    const lines = recordLinesOf(spec);
    try {
      return await this.writeStaged(path, lines, pieces, metadata);
    } catch (error) {
      // JSON that JavaScript reads and DuckDB refuses (a key twice in one object, say) would fail this batch
      // every time it is read again: the records are printed again as JavaScript read them, once.
      if (!DUCKDB_REFUSED_INPUT.test(errorMessage(error))) throw error;
      return await this.writeStaged(path, lines, lines.reprinted(pieces), metadata);
    }
  }

  private async writeStaged<R>(path: string, lines: RecordLines<R>, pieces: readonly Buffer[], metadata: ParquetMetadata): Promise<number> {
    const staged = join(this.stagingDir, `records-${++this.staged}.json`);
    try {
      stage(staged, pieces);
      return await this.writeQuery(path, lines.selectFrom(staged), metadata);
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

/** Buffers to a file, handed to the kernel a slice at a time. */
function stage(file: string, pieces: readonly Buffer[]): void {
  const fd = openSync(file, 'w');
  try {
    for (let start = 0; start < pieces.length; start += STAGING_SLICE_PIECES) writevSync(fd, pieces.slice(start, start + STAGING_SLICE_PIECES));
  } finally {
    closeSync(fd);
  }
}

/** Writes rows as one Parquet file through a writer of its own; for a few files (tests, fixtures), not a stream of them. */
export async function writeParquetRows<R>(path: string, spec: TableSpec<R>, rows: readonly Row<R>[], metadata: ParquetMetadata = {}): Promise<number> {
  const writer = await ParquetWriter.open();
  try {
    return await writer.writeRows(path, spec, rows, metadata);
  } finally {
    writer.close();
  }
}
