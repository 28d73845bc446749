import { ConfigError, wholeNumber } from '../../schemas/index.js';
import type { S3StoreOptions } from '../storage/index.js';
import { readParquetSql } from './catalog.js';
import { openLake } from './lake.js';
import { dataFileMetadata, groupFiles, partitionSuperseded, type DataFile } from './layout.js';
import { ParquetWriter } from './parquet.js';
import { ANALYTICS_TABLES } from './tables.js';

const MiB = 1024 * 1024;

export interface CompactOptions {
  /** Tables to compact. @default every analytics table */
  tables?: readonly string[];
  /** Files smaller than this many bytes are merged with their neighbours. @default 67108864 (64 MiB) */
  smallFileBytes?: number;
  /** A merged file stops taking inputs once they add up to this many bytes. @default 268435456 (256 MiB) */
  targetFileBytes?: number;
  /** Report what would be merged without writing or deleting anything. @default false */
  dryRun?: boolean;
  /** How to reach S3 when the lake is an s3:// URL. @default resolveS3StoreOptions(): TRIALRUN_S3_URL and the AWS_* variables */
  s3?: S3StoreOptions;
}

interface ResolvedCompactOptions {
  readonly tables: readonly string[];
  readonly smallFileBytes: number;
  readonly targetFileBytes: number;
  readonly dryRun: boolean;
}

export interface CompactTableReport {
  readonly table: string;
  readonly filesBefore: number;
  readonly filesAfter: number;
  /** Merged files written (each replaces two or more inputs). */
  readonly merged: number;
  readonly inputs: number;
  /** Inputs of an earlier, interrupted compaction, deleted now. */
  readonly supersededRemoved: number;
  readonly bytesBefore: number;
  readonly bytesAfter: number;
}

function resolveCompactOptions(options: CompactOptions): ResolvedCompactOptions {
  const known = ANALYTICS_TABLES.map((spec) => spec.table);
  const resolved = {
    tables: options.tables ?? known,
    smallFileBytes: options.smallFileBytes ?? 64 * MiB,
    targetFileBytes: options.targetFileBytes ?? 256 * MiB,
    dryRun: options.dryRun ?? false,
  };
  for (const table of resolved.tables) if (!known.includes(table)) throw new ConfigError(`CompactOptions.tables: unknown table "${table}"; one of ${known.join(', ')}`);
  for (const name of ['smallFileBytes', 'targetFileBytes'] as const) wholeNumber(`CompactOptions.${name}`, resolved[name], { min: 1 });
  if (resolved.targetFileBytes < resolved.smallFileBytes) {
    throw new ConfigError(`CompactOptions.targetFileBytes (${resolved.targetFileBytes}) must be at least smallFileBytes (${resolved.smallFileBytes})`);
  }
  return resolved;
}

/**
 * Runs of consecutive small files of one folder and topic partition to merge, each at most about
 * `targetFileBytes`. Only ranges the sink has recorded as landed are touched, so compaction never races
 * a flush in progress, and the sink never deletes a merged file.
 */
export function planMerges(files: readonly DataFile[], landedThrough: (topic: string, partition: number) => bigint, options: Pick<ResolvedCompactOptions, 'smallFileBytes' | 'targetFileBytes'>): DataFile[][] {
  const plans: DataFile[][] = [];
  for (const group of groupFiles(files)) {
    let run: DataFile[] = [];
    let runBytes = 0;
    const close = (): void => {
      if (run.length >= 2) plans.push(run);
      run = [];
      runBytes = 0;
    };
    for (const file of group) {
      const eligible = file.bytes < options.smallFileBytes && file.last <= landedThrough(file.topic, file.partition);
      if (!eligible) {
        close();
        continue;
      }
      run.push(file);
      runBytes += file.bytes;
      if (runBytes >= options.targetFileBytes) close();
    }
    close();
  }
  return plans;
}

/**
 * Merges small Parquet files into bigger ones, in a folder or on S3 (`s3://bucket/prefix`). A merged file is named
 * by the offset range it covers and written atomically (on S3: created once under its key) before its inputs are deleted; if compaction stops in between, readers already skip
 * the inputs (their ranges lie inside the merged one) and the next compaction deletes them.
 */
export async function compactStore(dataDir: string, options: CompactOptions = {}): Promise<CompactTableReport[]> {
  const resolved = resolveCompactOptions(options);
  const lake = openLake(dataDir, 'the analytics lake', options.s3);
  const ledger = new Map<string, bigint>();
  const writer = await ParquetWriter.open();
  const reports: CompactTableReport[] = [];
  try {
    await lake.check();
    for (const table of resolved.tables) {
      const all = await lake.listDataFiles(table);
      for (const file of all) {
        const key = `${file.topic}:${file.partition}`;
        if (!ledger.has(key)) ledger.set(key, await lake.readLedger(file.topic, file.partition));
      }
      const { live, superseded } = partitionSuperseded(all);
      const plans = planMerges(live, (topic, partition) => ledger.get(`${topic}:${partition}`) ?? -1n, resolved);
      let bytesAfter = live.reduce((sum, file) => sum + file.bytes, 0);
      if (!resolved.dryRun) {
        for (const file of superseded) await lake.remove(table, file);
        for (const inputs of plans) {
          const first = inputs[0]!;
          const range = { topic: first.topic, partition: first.partition, first: first.first, last: inputs[inputs.length - 1]!.last };
          // On S3 the inputs are read from local copies: merging needs no S3 reader inside DuckDB.
          const copies = await lake.localCopies(inputs);
          try {
            await lake.writeDataFile(table, first.bucket, range, (path) =>
              writer.writeQuery(path, `SELECT * FROM ${readParquetSql(copies.paths)}`, { ...dataFileMetadata(table, range), 'trialrun.compacted_from': String(inputs.length) }),
            );
          } finally {
            copies.release();
          }
          for (const file of inputs) await lake.remove(table, file);
        }
        bytesAfter = (await lake.listDataFiles(table)).reduce((sum, file) => sum + file.bytes, 0);
      }
      const inputs = plans.reduce((sum, plan) => sum + plan.length, 0);
      reports.push({
        table,
        filesBefore: all.length,
        filesAfter: live.length - inputs + plans.length,
        merged: plans.length,
        inputs,
        supersededRemoved: superseded.length,
        bytesBefore: all.reduce((sum, file) => sum + file.bytes, 0),
        bytesAfter,
      });
    }
  } finally {
    writer.close();
    lake.close();
  }
  return reports;
}
