import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { Bool, Float64, Int64, Table, TimestampMillisecond, Utf8, tableToIPC, vectorFromArray, type DataType } from 'apache-arrow';
import * as parquet from 'parquet-wasm';
import type { Column, ColumnType } from './tables.js';

const ARROW_TYPES: Record<ColumnType, () => DataType> = {
  utf8: () => new Utf8(),
  int64: () => new Int64(),
  float64: () => new Float64(),
  bool: () => new Bool(),
  timestamp: () => new TimestampMillisecond(),
};

function arrowValue(type: ColumnType, value: string | number | bigint | boolean | null): unknown {
  if (value === null) return null;
  if (type === 'int64') return BigInt(value as number | bigint);
  if (type === 'timestamp') return typeof value === 'string' ? Date.parse(value) : Number(value);
  return value;
}

/** Builds an Arrow record batch from rows with explicit column types (no inference: null-only columns stay typed). */
export function toArrowTable<R>(columns: readonly Column<R>[], rows: readonly R[]): Table {
  const vectors = Object.fromEntries(
    columns.map((column) => [column.name, vectorFromArray(rows.map((row) => arrowValue(column.type, column.value(row))), ARROW_TYPES[column.type]())]),
  );
  return new Table(vectors);
}

/**
 * Writes rows as one Parquet file (zstd), atomically: a reader or a crashed writer never leaves or sees a
 * half-written file under the final name.
 */
export function writeParquetFile<R>(path: string, columns: readonly Column<R>[], rows: readonly R[]): void {
  const table = toArrowTable(columns, rows);
  const wasmTable = parquet.Table.fromIPCStream(tableToIPC(table, 'stream'));
  const properties = new parquet.WriterPropertiesBuilder().setCompression(parquet.Compression.ZSTD).build();
  const bytes = parquet.writeParquet(wasmTable, properties);
  mkdirSync(dirname(path), { recursive: true });
  const temp = `${path}.tmp-${process.pid}`;
  writeFileSync(temp, bytes);
  renameSync(temp, path);
}
