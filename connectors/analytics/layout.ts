import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { writeFileAtomically } from './parquet.js';

/**
 * How the analytics store is laid out on disk:
 *
 *   <dataDir>/<table>/run_id=<run>/hour=<YYYY-MM-DDTHH>/<topic>-p<partition>-<first>-<last>.parquet
 *   <dataDir>/_sink/ledger/<topic>-p<partition>.json
 *
 * A file holds the rows of one table, run and UTC hour whose source records lie in the offset range
 * first..last (inclusive) of one topic partition. One flush of the sink covers one offset range and
 * writes one file per (run, hour) it met, all with the same range; compaction merges consecutive ranges
 * of one folder into a file whose range covers them, so a file whose range lies inside another file's
 * range in the same folder is superseded and ignored. The ledger records, per topic partition, the last
 * offset whose rows are all landed.
 */
export interface OffsetRange {
  /** Physical topic name. */
  readonly topic: string;
  readonly partition: number;
  readonly first: bigint;
  readonly last: bigint;
}

export interface DataFile extends OffsetRange {
  readonly path: string;
  /** The folder relative to the table root, e.g. `run_id=abc/hour=2025-01-01T13`. */
  readonly bucket: string;
  readonly bytes: number;
}

const FILE_NAME = /^(.+)-p(\d+)-(\d+)-(\d+)\.parquet$/;

export function dataFileName(range: OffsetRange): string {
  return `${range.topic}-p${range.partition}-${range.first}-${range.last}.parquet`;
}

/** What a data file's Parquet key-value metadata says about it: its table and the offset range it covers. */
export function dataFileMetadata(table: string, range: OffsetRange): Record<string, string> {
  return {
    'trialrun.table': table,
    'trialrun.topic': range.topic,
    'trialrun.partition': String(range.partition),
    'trialrun.first_offset': range.first.toString(),
    'trialrun.last_offset': range.last.toString(),
  };
}

export function parseDataFileName(name: string): OffsetRange | undefined {
  const match = FILE_NAME.exec(name);
  if (!match) return undefined;
  return { topic: match[1]!, partition: Number(match[2]), first: BigInt(match[3]!), last: BigInt(match[4]!) };
}

/** The folder of a run's rows (run ids are made safe for a path). */
export const runFolder = (runId: string): string => `run_id=${runId.replace(/[^\w.-]/g, '_')}`;

/** The run and UTC hour folder of a row, from its lineage (event time, not arrival time). */
export function bucketOf(runId: string, createdAt: string): string {
  const time = new Date(createdAt);
  const hour = Number.isNaN(time.getTime()) ? 'unknown' : time.toISOString().slice(0, 13);
  return `${runFolder(runId)}/hour=${hour}`;
}

/** Every data file under a table's folder (temporary files of writers in progress excluded). */
export function listDataFiles(tableDir: string): DataFile[] {
  const files: DataFile[] = [];
  const walk = (dir: string): void => {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else {
        const range = parseDataFileName(entry.name);
        if (range) files.push({ ...range, path, bucket: relative(tableDir, dir), bytes: statSync(path).size });
      }
    }
  };
  walk(tableDir);
  return files;
}

const groupKey = (file: DataFile): string => `${file.bucket}\u0000${file.topic}\u0000${file.partition}`;

/** Groups files by (folder, topic, partition), each group sorted by range start (widest first on ties). */
export function groupFiles(files: readonly DataFile[]): DataFile[][] {
  const groups = new Map<string, DataFile[]>();
  for (const file of files) {
    const group = groups.get(groupKey(file));
    if (group) group.push(file);
    else groups.set(groupKey(file), [file]);
  }
  return [...groups.values()].map((group) => group.sort((a, b) => (a.first !== b.first ? (a.first < b.first ? -1 : 1) : a.last > b.last ? -1 : a.last < b.last ? 1 : 0)));
}

/**
 * Splits files into the live ones and those superseded by a compacted file covering their range (left
 * behind when compaction stopped between writing its output and deleting its inputs).
 */
export function partitionSuperseded(files: readonly DataFile[]): { live: DataFile[]; superseded: DataFile[] } {
  const live: DataFile[] = [];
  const superseded: DataFile[] = [];
  for (const group of groupFiles(files)) {
    let coveredThrough = -1n;
    for (const file of group) {
      if (file.last <= coveredThrough) superseded.push(file);
      else {
        live.push(file);
        coveredThrough = file.last;
      }
    }
  }
  return { live, superseded };
}

/** Where the sink records what it has landed; outside every table folder so no query ever reads it. */
export const ledgerDir = (dataDir: string): string => join(dataDir, '_sink', 'ledger');

const ledgerPath = (dataDir: string, topic: string, partition: number): string => join(ledgerDir(dataDir), `${topic}-p${partition}.json`);

/** The last offset of a topic partition whose rows are all landed, or -1 when none. */
export function readLedger(dataDir: string, topic: string, partition: number): bigint {
  const path = ledgerPath(dataDir, topic, partition);
  if (!existsSync(path)) return -1n;
  const entry = JSON.parse(readFileSync(path, 'utf8')) as { landedThrough?: unknown };
  if (typeof entry.landedThrough !== 'string' || !/^-?\d+$/.test(entry.landedThrough)) throw new Error(`${path}: landedThrough must be an offset string, got ${JSON.stringify(entry.landedThrough)}`);
  return BigInt(entry.landedThrough);
}

export function writeLedger(dataDir: string, topic: string, partition: number, landedThrough: bigint): void {
  writeFileAtomically(ledgerPath(dataDir, topic, partition), `${JSON.stringify({ topic, partition, landedThrough: landedThrough.toString() })}\n`);
}
