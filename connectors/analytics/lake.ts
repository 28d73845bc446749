import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ArtifactIntegrityError, ConfigError, isS3Url } from '../../schemas/index.js';
import { openBlobStore, type BlobStore, type S3StoreOptions } from '../storage/index.js';
import { dataFileName, listDataFiles, parseDataFileName, readLedger, writeLedger, type DataFile, type OffsetRange } from './layout.js';

/**
 * Where the Parquet lake lives: a local folder (the embedded default) or `s3://bucket/prefix` through the storage
 * port. Both hold the same layout (layout.ts) and give the sink and compaction the same guarantees: a data file
 * appears whole under its final name or not at all, and its name (table, run, hour, topic partition, offset range)
 * is decided by the records it holds, so a flush redone after a crash writes the same name again.
 */
export interface Lake {
  /** The lake as given: a folder path or an `s3://` URL. */
  readonly location: string;
  /** The store underneath when the lake is on S3; null for a local folder (read directly by DuckDB). */
  readonly store: BlobStore | null;
  /** Every data file of a table, its `path` what DuckDB reads (a local path, or an `s3://` URI). */
  listDataFiles(table: string): Promise<DataFile[]>;
  /** The last offset of a topic partition whose rows are all landed, or -1 when none. */
  readLedger(topic: string, partition: number): Promise<bigint>;
  writeLedger(topic: string, partition: number, landedThrough: bigint): Promise<void>;
  /**
   * Publishes one data file: `write` makes it at the local path it is given (atomically, as ParquetWriter does);
   * on S3 the bytes are then created once under the file's key (If-None-Match: *), so a reader never sees part of
   * one. The same bytes already there (a retry whose answer was lost) are success.
   * @returns where the file is now, and its size
   */
  writeDataFile(table: string, bucket: string, range: OffsetRange, write: (path: string) => Promise<number>): Promise<{ path: string; bytes: number }>;
  /** Local copies of data files to read (the files themselves when the lake is local); `release` removes copies. */
  localCopies(files: readonly DataFile[]): Promise<{ paths: string[]; release: () => void }>;
  /** Removes a data file; an absent one is not an error. */
  remove(table: string, file: DataFile): Promise<void>;
  /** One request at start on S3 (bucket, credentials, reachable): a ConfigError naming what is wrong. */
  check(): Promise<void>;
  close(): void;
}

/** The lake a location names: `s3://bucket/prefix` (checked here, `option` named in the error) or a folder. */
export function openLake(location: string, option: string, s3: S3StoreOptions = {}): Lake {
  if (isS3Url(location)) return new BlobLake(openBlobStore(location, option, s3), location);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(location)) throw new ConfigError(`${option}: the analytics lake is a folder or an s3:// URL, not "${location}"`);
  return new FolderLake(location);
}

/** The lake in a blob store, at the store's location; the lake closes the store. */
export function blobLake(store: BlobStore): Lake {
  return new BlobLake(store, store.location);
}

class FolderLake implements Lake {
  readonly store = null;

  constructor(readonly location: string) {}

  async listDataFiles(table: string): Promise<DataFile[]> {
    return listDataFiles(join(this.location, table));
  }

  async readLedger(topic: string, partition: number): Promise<bigint> {
    return readLedger(this.location, topic, partition);
  }

  async writeLedger(topic: string, partition: number, landedThrough: bigint): Promise<void> {
    writeLedger(this.location, topic, partition, landedThrough);
  }

  async writeDataFile(table: string, bucket: string, range: OffsetRange, write: (path: string) => Promise<number>): Promise<{ path: string; bytes: number }> {
    const path = join(this.location, table, bucket, dataFileName(range));
    return { path, bytes: await write(path) };
  }

  async localCopies(files: readonly DataFile[]): Promise<{ paths: string[]; release: () => void }> {
    return { paths: files.map((file) => file.path), release: () => undefined };
  }

  async remove(_table: string, file: DataFile): Promise<void> {
    rmSync(file.path, { force: true });
  }

  async check(): Promise<void> {}

  close(): void {}
}

/** Reads of a replaced object before giving up: each retry needs a flush to have replaced it again meanwhile. */
const REPLACED_READ_ATTEMPTS = 5;

const ledgerKey = (topic: string, partition: number): string => `_sink/ledger/${topic}-p${partition}.json`;

/**
 * The lake in a blob store (S3). Data files are written to a local staging folder of the lake's own, then created
 * once under their key; the ledger is one small object per topic partition, replaced by each flush (read with the
 * digest its put recorded).
 */
class BlobLake implements Lake {
  private staging: string | undefined;

  constructor(
    readonly store: BlobStore,
    readonly location: string,
  ) {}

  async listDataFiles(table: string): Promise<DataFile[]> {
    const files: DataFile[] = [];
    for (const blob of await this.store.list(`${table}/`)) {
      const parts = blob.key.split('/');
      const range = parseDataFileName(parts[parts.length - 1]!);
      if (range) files.push({ ...range, path: this.store.uri(blob.key), bucket: parts.slice(1, -1).join('/'), bytes: blob.bytes });
    }
    return files;
  }

  async readLedger(topic: string, partition: number): Promise<bigint> {
    const key = ledgerKey(topic, partition);
    const bytes = await this.readReplaceable(key);
    if (!bytes) return -1n;
    const entry = JSON.parse(bytes.toString('utf8')) as { landedThrough?: unknown };
    if (typeof entry.landedThrough !== 'string' || !/^-?\d+$/.test(entry.landedThrough)) throw new Error(`${this.store.uri(key)}: landedThrough must be an offset string, got ${JSON.stringify(entry.landedThrough)}`);
    return BigInt(entry.landedThrough);
  }

  /**
   * The bytes of an object that writers replace (a ledger entry), or null when absent. Its digest comes from a head
   * and its bytes from a later get: a flush that replaces it in between makes the bytes fail the older digest. That
   * is read again with the new head; a digest that still does not match after the head stayed the same is damage.
   */
  private async readReplaceable(key: string): Promise<Buffer | null> {
    let head = await this.store.head(key);
    for (let attempt = 1; ; attempt++) {
      if (!head) return null;
      if (!head.sha256) throw new ConfigError(`${this.store.uri(key)}: a ledger entry without the sha256 the sink records; was it written by something else?`);
      try {
        return await this.store.get(key, head.sha256);
      } catch (error) {
        if (!(error instanceof ArtifactIntegrityError) || attempt >= REPLACED_READ_ATTEMPTS) throw error;
        const newer = await this.store.head(key);
        if (newer?.sha256 === head.sha256) throw error;
        head = newer;
      }
    }
  }

  async writeLedger(topic: string, partition: number, landedThrough: bigint): Promise<void> {
    await this.store.put(ledgerKey(topic, partition), Buffer.from(`${JSON.stringify({ topic, partition, landedThrough: landedThrough.toString() })}\n`));
  }

  async writeDataFile(table: string, bucket: string, range: OffsetRange, write: (path: string) => Promise<number>): Promise<{ path: string; bytes: number }> {
    const name = dataFileName(range);
    const local = join(this.stagingDir(), `${randomBytes(6).toString('hex')}-${name}`);
    try {
      await write(local);
      const result = await this.store.put(`${table}/${bucket}/${name}`, readFileSync(local), { ifAbsent: true });
      return { path: result.uri, bytes: result.bytes };
    } finally {
      rmSync(local, { force: true });
    }
  }

  async localCopies(files: readonly DataFile[]): Promise<{ paths: string[]; release: () => void }> {
    const paths: string[] = [];
    const release = (): void => {
      for (const path of paths) rmSync(path, { force: true });
    };
    try {
      for (const file of files) {
        const key = this.keyOf(file);
        const head = await this.store.head(key);
        if (!head?.sha256) throw new ConfigError(`${file.path}: gone, or without the sha256 the sink records`);
        const path = join(this.stagingDir(), `${randomBytes(6).toString('hex')}-${key.split('/').pop()!}`);
        writeFileSync(path, await this.store.get(key, head.sha256));
        paths.push(path);
      }
    } catch (error) {
      release();
      throw error;
    }
    return { paths, release };
  }

  async remove(table: string, file: DataFile): Promise<void> {
    await this.store.delete(`${table}/${file.bucket}/${dataFileName(file)}`);
  }

  check(): Promise<void> {
    return this.store.check();
  }

  close(): void {
    this.store.close();
    if (this.staging) rmSync(this.staging, { recursive: true, force: true });
  }

  private keyOf(file: DataFile): string {
    const base = this.store.uri('x').slice(0, -1);
    if (!file.path.startsWith(base)) throw new ConfigError(`${file.path} is not in the lake ${this.location}`);
    return file.path.slice(base.length);
  }

  /** A folder of this lake's own for files on their way up or down; made when first needed. */
  private stagingDir(): string {
    this.staging ??= mkdtempSync(join(tmpdir(), 'trialrun-lake-'));
    return this.staging;
  }
}
