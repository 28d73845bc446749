import { createReadStream, existsSync, readFileSync, statSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { createGunzip, gunzipSync } from 'node:zlib';
import { DuckDBInstance, JSDuckDBValueConverter, type DuckDBConnection, type DuckDBDataChunk } from '@duckdb/node-api';
import { ConfigError, errorMessage, wholeNumber } from '../../schemas/index.js';
import { sqlString } from '../analytics/index.js';
import { MAX_ROW_DEPTH, measureRow } from './shape.js';

export const SOURCE_FORMATS = ['jsonl', 'json', 'csv', 'parquet'] as const;
export type SourceFormat = (typeof SOURCE_FORMATS)[number];

/** A row that could not be read, with its 1-based position in its file and why. */
export interface RowReject {
  readonly file: string;
  readonly row: number;
  readonly reason: string;
}

/** One row of a source file: its 1-based position (the line for JSON Lines, the data row for CSV, Parquet and JSON arrays) and its columns. */
export interface SourceRow {
  readonly row: number;
  readonly value: Readonly<Record<string, unknown>>;
}

export interface ReadRowsOptions {
  /** @default inferred from the file name (see `formatOf`) */
  format?: SourceFormat;
  /**
   * Longest line (JSON Lines, CSV) or row (JSON, Parquet: the sum of its text fields) accepted, in bytes; a
   * longer one becomes a reject naming its size instead of failing the file. @default 1 MiB
   */
  maxRowBytes?: number;
  /**
   * Deepest nesting of arrays and objects accepted in a row (a flat row is 1, up to `MAX_ROW_DEPTH`); a
   * deeper row becomes a reject naming its depth, so nothing downstream walks it. @default 32
   */
  maxRowDepth?: number;
  /** Called with each batch of rows (up to one DuckDB chunk, 2048 rows) in file order. */
  onRows: (rows: readonly SourceRow[]) => void | Promise<void>;
  /** Called for each row that could not be read, in no particular order. */
  onReject: (reject: RowReject) => void;
}

export interface ReadRowsReport {
  readonly file: string;
  readonly format: SourceFormat;
  /** Rows handed to onRows. */
  readonly rows: number;
  readonly rejects: number;
}

const EXTENSIONS: ReadonlyArray<readonly [RegExp, SourceFormat]> = [
  [/\.(jsonl|ndjson)(\.gz)?$/i, 'jsonl'],
  [/\.json(\.gz)?$/i, 'json'],
  [/\.(csv|tsv)(\.gz)?$/i, 'csv'],
  [/\.parquet$/i, 'parquet'],
];

/** The format a file name implies (`.jsonl`/`.ndjson`, `.json`, `.csv`/`.tsv`, each optionally `.gz`, and `.parquet`). */
export function formatOf(file: string): SourceFormat {
  const match = EXTENSIONS.find(([pattern]) => pattern.test(file));
  if (!match) throw new ConfigError(`cannot tell the format of ${file} from its extension "${extname(file)}"; name it .jsonl, .json, .csv or .parquet (optionally .gz), or set the source's format`);
  return match[1];
}

const GLOB_CHARS = /[*?[{]/;
const MIB = 1024 * 1024;

/** Lines longer than this are refused outright: DuckDB would have to buffer them whole. */
const MAX_LINE_BYTES = 512 * MIB;

/**
 * The longest physical line of a text file (decompressed if gzipped). DuckDB's CSV reader silently drops a
 * line longer than its buffer instead of rejecting it, so the buffer is sized from this before every scan.
 */
async function longestLine(file: string): Promise<{ bytes: number; line: number }> {
  const raw = createReadStream(file, { highWaterMark: 1 << 20 });
  const stream = /\.gz$/i.test(file) ? raw.pipe(createGunzip()) : raw;
  let current = 0;
  let line = 1;
  let longest = { bytes: 0, line: 1 };
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    let start = 0;
    for (let newline = chunk.indexOf(10, start); newline >= 0; newline = chunk.indexOf(10, start)) {
      current += newline - start;
      if (current > longest.bytes) longest = { bytes: current, line };
      current = 0;
      line++;
      start = newline + 1;
    }
    current += chunk.length - start;
  }
  if (current > longest.bytes) longest = { bytes: current, line };
  return longest;
}

/** Bytes of a file's content (decompressed if gzipped). */
async function contentBytes(file: string): Promise<number> {
  if (!/\.gz$/i.test(file)) return statSync(file).size;
  let bytes = 0;
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 }).pipe(createGunzip()) as AsyncIterable<Buffer>) bytes += chunk.length;
  return bytes;
}

/** The largest JSON file read whole when DuckDB's parser refuses it (V8's longest string is about 512 MiB). */
const MAX_WHOLE_JSON_BYTES = 256 * MIB;

/** DuckDB's largest maximum_object_size (a 32-bit count). */
const MAX_OBJECT_BYTES = 2 ** 32 - 1;

const bufferFor = (longest: number): number => Math.max(16 * MIB, Math.ceil((2 * longest + MIB) / MIB) * MIB);

/** A JSON Lines file read as one text column per physical line; blank lines come back as NULL, so row n is line n. */
function lineScan(file: string, maxRowBytes: number, bufferBytes: number, rejectsTable: string): string {
  return `read_csv(${sqlString(file)}, columns = {'text': 'VARCHAR'}, header = false, auto_detect = false, delim = E'\\x1f', quote = '', escape = '',
    strict_mode = false, max_line_size = ${Math.min(maxRowBytes, bufferBytes)}, buffer_size = ${bufferBytes},
    store_rejects = true, rejects_table = '${rejectsTable}', rejects_scan = '${rejectsTable}_scan')`;
}

/** CSV records of any size up to the buffer; the row size limit is applied to the parsed fields, so an over-long row is a reject naming its size. */
function csvScan(file: string, bufferBytes: number, rejectsTable: string): string {
  return `read_csv(${sqlString(file)}, header = true, all_varchar = true, max_line_size = ${bufferBytes}, buffer_size = ${bufferBytes},
    store_rejects = true, rejects_table = '${rejectsTable}', rejects_scan = '${rejectsTable}_scan')`;
}

function describeDuckDbReject(type: string, message: string, maxRowBytes: number): string {
  if (type === 'INVALID ENCODING') return 'not valid UTF-8';
  if (type === 'LINE SIZE OVER MAXIMUM') {
    const size = /Actual Size:\s*(\d+)/.exec(message)?.[1];
    return `longer than limits.maxRowBytes (${maxRowBytes} bytes)${size ? `: ${size} bytes` : ''}`;
  }
  return `${type.toLowerCase()}: ${message}`;
}

/**
 * Numbers the rows a scan returns with their position in the file: DuckDB leaves out the lines it rejected,
 * so each is skipped over here (`skipped` ascending).
 */
class Positions {
  private position = 0;
  private nextSkipped = 0;

  constructor(private readonly skipped: readonly number[]) {}

  next(): number {
    this.position++;
    while (this.nextSkipped < this.skipped.length && this.skipped[this.nextSkipped] === this.position) {
      this.position++;
      this.nextSkipped++;
    }
    return this.position;
  }
}

/**
 * Reads local tabular files (JSON Lines, JSON, CSV, Parquet; gzipped text too) through DuckDB, one batch
 * at a time so memory stays flat, keeping every row's position. A bad row (invalid UTF-8, invalid JSON,
 * a line over the size limit, a malformed CSV record) is reported with its position and reading goes on;
 * a file that cannot be read at all (missing, empty, not the format it claims) is a ConfigError naming it.
 */
export class TabularFiles {
  private scans = 0;

  private constructor(
    private readonly instance: DuckDBInstance,
    private readonly connection: DuckDBConnection,
  ) {}

  static async open(): Promise<TabularFiles> {
    const instance = await DuckDBInstance.create(':memory:');
    return new TabularFiles(instance, await instance.connect());
  }

  /** The files a path or glob names, sorted; a plain path that does not exist, or a glob that matches nothing, is an error. */
  async expand(pattern: string): Promise<string[]> {
    const absolute = resolve(pattern);
    if (!GLOB_CHARS.test(pattern)) {
      if (!existsSync(absolute)) throw new ConfigError(`source file ${absolute} does not exist`);
      if (!statSync(absolute).isFile()) throw new ConfigError(`source ${absolute} is not a file`);
      return [absolute];
    }
    const reader = await this.connection.runAndReadAll(`SELECT file FROM glob(${sqlString(absolute)}) ORDER BY file`);
    const files = reader.getRowsJS().map(([file]) => String(file));
    if (files.length === 0) throw new ConfigError(`no file matches the source pattern ${absolute}`);
    return files;
  }

  /** Column names of a CSV or Parquet file (JSON rows carry their own). */
  async columns(file: string, format: SourceFormat = formatOf(file)): Promise<string[] | null> {
    if (format !== 'csv' && format !== 'parquet') return null;
    this.checkReadable(file);
    const scan = format === 'csv' ? `read_csv(${sqlString(file)}, header = true, all_varchar = true)` : `read_parquet(${sqlString(file)})`;
    const reader = await this.guard(file, format, () => this.connection.runAndReadAll(`SELECT column_name FROM (DESCRIBE SELECT * FROM ${scan})`));
    return reader.getRowsJS().map(([name]) => String(name));
  }

  async readRows(file: string, options: ReadRowsOptions): Promise<ReadRowsReport> {
    const format = options.format ?? formatOf(file);
    const maxRowBytes = options.maxRowBytes ?? MIB;
    const maxRowDepth = options.maxRowDepth ?? 32;
    wholeNumber('ReadRowsOptions.maxRowBytes', maxRowBytes, { min: 1024, unit: 'bytes' });
    wholeNumber('ReadRowsOptions.maxRowDepth', maxRowDepth, { min: 1, max: MAX_ROW_DEPTH });
    this.checkReadable(file);
    const rejectsTable = `trialrun_rejects_${++this.scans}`;
    let rows = 0;
    let rejects = 0;
    const reject = (row: number, reason: string): void => {
      rejects++;
      options.onReject({ file, row, reason });
    };
    const emit = async (batch: SourceRow[]): Promise<void> => {
      rows += batch.length;
      if (batch.length > 0) await options.onRows(batch);
    };
    // JSON Lines lines are held to maxRowBytes by DuckDB as they are read; other rows by their text here.
    const pathological = (row: number, value: Record<string, unknown>, countText: boolean): boolean => {
      const shape = measureRow(value, { textBytes: countText });
      if (shape.depth > maxRowDepth) {
        reject(row, `nested deeper than limits.maxRowDepth (${maxRowDepth} levels): ${shape.depth} levels of arrays and objects`);
        return true;
      }
      if (shape.textBytes <= maxRowBytes) return false;
      reject(row, `longer than limits.maxRowBytes (${maxRowBytes} bytes): ${shape.textBytes} bytes of text`);
      return true;
    };

    let bufferBytes = 16 * MIB;
    if (format === 'jsonl' || format === 'csv') {
      const longest = await this.guard(file, format, () => longestLine(file));
      if (longest.bytes > MAX_LINE_BYTES) throw new ConfigError(`line ${longest.line} of ${file} is ${longest.bytes} bytes; lines over ${MAX_LINE_BYTES} bytes cannot be read`);
      bufferBytes = bufferFor(longest.bytes);
    }

    await this.guard(file, format, async () => {
      switch (format) {
        case 'jsonl': {
          // First pass: the lines DuckDB itself rejects (bad UTF-8, over-long), so the second pass can number
          // every surviving line exactly; DuckDB drops rejected lines from its output.
          const rejected = await this.scanRejects(lineScan(file, maxRowBytes, bufferBytes, rejectsTable), rejectsTable);
          for (const [line, reason] of rejected) reject(line, describeDuckDbReject(reason.type, reason.message, maxRowBytes));
          const lines = new Positions([...rejected.keys()].sort((a, b) => a - b));
          await this.stream(`SELECT text FROM ${lineScan(file, maxRowBytes, bufferBytes, `${rejectsTable}_again`)}`, async (chunk) => {
            const texts = chunk.getColumnVector(0);
            const batch: SourceRow[] = [];
            for (let i = 0; i < chunk.rowCount; i++) {
              const line = lines.next();
              const text = texts.getItem(i) as string | null;
              if (text === null || text.trim() === '') continue;
              let value: unknown;
              try {
                value = JSON.parse(text);
              } catch (error) {
                reject(line, `not valid JSON: ${errorMessage(error)}`);
                continue;
              }
              if (value === null || typeof value !== 'object' || Array.isArray(value)) {
                reject(line, `not a JSON object (got ${Array.isArray(value) ? 'an array' : value === null ? 'null' : typeof value})`);
                continue;
              }
              if (!pathological(line, value as Record<string, unknown>, false)) batch.push({ row: line, value: value as Record<string, unknown> });
            }
            await emit(batch);
          });
          break;
        }
        case 'json': {
          let row = 0;
          const take = (value: unknown, batch: SourceRow[]): void => {
            row++;
            if (value === null || typeof value !== 'object' || Array.isArray(value)) reject(row, 'not a JSON object');
            else if (!pathological(row, value as Record<string, unknown>, true)) batch.push({ row, value: value as Record<string, unknown> });
          };
          // No object is larger than the file: with that as DuckDB's limit, an over-long object is read and
          // rejected here with its size, instead of failing the whole file.
          const size = await contentBytes(file);
          const objectBytes = Math.min(MAX_OBJECT_BYTES, Math.max(16 * MIB, 2 * maxRowBytes, size + 1));
          try {
            await this.stream(`SELECT json FROM read_json_objects(${sqlString(file)}, format = 'auto', maximum_object_size = ${objectBytes})`, async (chunk) => {
              const texts = chunk.getColumnVector(0);
              const batch: SourceRow[] = [];
              for (let i = 0; i < chunk.rowCount; i++) take(JSON.parse(texts.getItem(i) as string), batch);
              await emit(batch);
            });
          } catch (error) {
            // DuckDB's JSON parser refuses some valid JSON (a lone surrogate escape such as "\ud800"), failing
            // the whole file for one row's content. JSON.parse takes it: the file is read again whole (strict
            // UTF-8) and the rows not yet handed on are taken from there, so that row fails validation alone.
            if (!/Malformed JSON/i.test(errorMessage(error)) || size > MAX_WHOLE_JSON_BYTES) throw error;
            let whole: unknown;
            try {
              const bytes = readFileSync(file);
              whole = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(/\.gz$/i.test(file) ? gunzipSync(bytes) : bytes));
            } catch {
              throw error;
            }
            const values = Array.isArray(whole) ? whole : [whole];
            const done = row;
            row = 0;
            const batch: SourceRow[] = [];
            for (const value of values) {
              if (row < done) row++;
              else take(value, batch);
            }
            await emit(batch);
          }
          break;
        }
        case 'csv':
        case 'parquet': {
          let skipped: number[] = [];
          if (format === 'csv') {
            // DuckDB counts the header as line 1; rows here are data rows.
            const rejected = await this.scanRejects(csvScan(file, bufferBytes, rejectsTable), rejectsTable);
            for (const [line, reason] of rejected) reject(line - 1, describeDuckDbReject(reason.type, reason.message, maxRowBytes));
            skipped = [...rejected.keys()].map((line) => line - 1).sort((a, b) => a - b);
          }
          const scan = format === 'csv' ? csvScan(file, bufferBytes, `${rejectsTable}_again`) : `read_parquet(${sqlString(file)})`;
          const rows = new Positions(skipped);
          await this.stream(`SELECT * FROM ${scan}`, async (chunk, names) => {
            const columns = chunk.convertColumns(JSDuckDBValueConverter);
            const batch: SourceRow[] = [];
            for (let i = 0; i < chunk.rowCount; i++) {
              const row = rows.next();
              const value: Record<string, unknown> = {};
              names.forEach((name, c) => (value[name] = plain(columns[c]![i])));
              if (!pathological(row, value, true)) batch.push({ row, value });
            }
            await emit(batch);
          });
          break;
        }
      }
    });
    return { file, format, rows, rejects };
  }

  close(): void {
    this.connection.closeSync();
    this.instance.closeSync();
  }

  private checkReadable(file: string): void {
    if (!existsSync(file)) throw new ConfigError(`source file ${file} does not exist`);
    if (statSync(file).size === 0) throw new ConfigError(`source file ${file} is empty`);
  }

  /** Runs a scan for its rejects only; returns them by line (the first reason when a line has several). */
  private async scanRejects(scan: string, rejectsTable: string): Promise<Map<number, { type: string; message: string }>> {
    await this.connection.run(`SELECT count(*) FROM ${scan}`);
    const reader = await this.connection.runAndReadAll(`SELECT CAST(line AS BIGINT), error_type, error_message FROM ${rejectsTable} ORDER BY line`);
    const rejected = new Map<number, { type: string; message: string }>();
    for (const [line, type, message] of reader.getRowsJS()) {
      if (!rejected.has(Number(line))) rejected.set(Number(line), { type: String(type), message: String(message) });
    }
    await this.connection.run(`DROP TABLE IF EXISTS ${rejectsTable}; DROP TABLE IF EXISTS ${rejectsTable}_scan`);
    return rejected;
  }

  private async stream(sql: string, onChunk: (chunk: DuckDBDataChunk, columnNames: readonly string[]) => Promise<void>): Promise<void> {
    const result = await this.connection.stream(sql);
    const columnNames = result.columnNames();
    for (;;) {
      const chunk = await result.fetchChunk();
      if (!chunk || chunk.rowCount === 0) break;
      await onChunk(chunk, columnNames);
    }
  }

  /** Turns DuckDB's failures on a whole file into an error that names the file and what it was read as. */
  private async guard<T>(file: string, format: SourceFormat, read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (error) {
      if (error instanceof ConfigError) throw error;
      const message = errorMessage(error);
      const hint = /unicode|utf-?8/i.test(message) ? ' (the file is not valid UTF-8)' : /magic bytes|not a parquet file|No magic/i.test(message) ? ' (not a Parquet file)' : '';
      throw new ConfigError(`reading ${file} as ${format} failed${hint}: ${message.split('\n')[0]}`, { cause: error });
    }
  }
}

/** DuckDB values as plain JSON-like values: BIGINTs within 2^53 become numbers, lists and structs plain arrays and objects. */
function plain(value: unknown): unknown {
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (Array.isArray(value)) return value.map(plain);
  if (value instanceof Date) return value.toISOString();
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
}
