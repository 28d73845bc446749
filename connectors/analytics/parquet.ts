import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { tableToIPC } from 'apache-arrow';
import * as parquet from 'parquet-wasm';
import { toArrowTable } from './arrow.js';
import type { Column } from './tables.js';

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

/**
 * Writes rows as one Parquet file (zstd), atomically: a reader or a crashed writer never leaves or sees a
 * half-written file under the final name. `metadata` lands in the file's key-value metadata (DuckDB:
 * `parquet_kv_metadata(file)`).
 * @returns the file's size in bytes
 */
export function writeParquetFile<R>(path: string, columns: readonly Column<R>[], rows: readonly R[], metadata: Readonly<Record<string, string>> = {}): number {
  const table = toArrowTable(columns, rows);
  const wasmTable = parquet.Table.fromIPCStream(tableToIPC(table, 'stream'));
  // Nested lists hold mostly free text (tool output, observations): dictionaries and min/max statistics
  // cost a third of the write there and prune nothing. parquet-wasm addresses columns by top-level name
  // only, so both are off by default and back on for every scalar column.
  let builder = new parquet.WriterPropertiesBuilder()
    .setCompression(parquet.Compression.ZSTD)
    .setKeyValueMetadata(new Map(Object.entries(metadata)))
    .setDictionaryEnabled(false)
    .setStatisticsEnabled(parquet.EnabledStatistics.None);
  for (const column of columns) {
    if (typeof column.type === 'string') builder = builder.setColumnDictionaryEnabled(column.name, true).setColumnStatisticsEnabled(column.name, parquet.EnabledStatistics.Page);
  }
  const properties = builder.build();
  const bytes = parquet.writeParquet(wasmTable, properties);
  writeFileAtomically(path, bytes);
  return bytes.length;
}
