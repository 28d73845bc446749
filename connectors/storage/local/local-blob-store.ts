import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { link, mkdir, open, readdir, readFile, rename, rm, stat, unlink } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BlobExistsError, BlobNotFoundError, ConfigError, StorageError } from '../../../schemas/index.js';
import { checkBlobKey, checkListPrefix, checkSha256, givenOrComputedSha256, verifySha256, type BlobHead, type BlobInfo, type BlobStore, type PutOptions, type PutResult } from '../blob-store.js';

const TEMP = '.tmp-';

/**
 * The embedded default: one folder, a key's '/' parts its sub-folders. A put writes a temp file beside the target
 * and then renames it into place (or, for `ifAbsent`, hard-links it: link(2) fails when the name is taken, so of
 * two writers exactly one publishes), so a reader never sees a partial file and a crash leaves only a temp file,
 * which list skips. The digest is not kept beside the file: head reads the bytes and hashes them (a local read is
 * cheap, and there is no second file to fall out of step with the first).
 */
export class LocalBlobStore implements BlobStore {
  readonly root: string;
  readonly location: string;

  constructor(root: string) {
    this.root = resolve(root);
    this.location = pathToFileURL(this.root).href;
  }

  uri(key: string): string {
    return pathToFileURL(this.path(key)).href;
  }

  async put(key: string, data: Buffer, options: PutOptions = {}): Promise<PutResult> {
    const path = this.path(key);
    const uri = pathToFileURL(path).href;
    const sha256 = givenOrComputedSha256(data, options.sha256, uri);
    const result = { key, uri, sha256, bytes: data.length, created: true };
    const temp = join(dirname(path), `${TEMP}${process.pid}-${randomBytes(6).toString('hex')}`);
    await this.io(uri, async () => {
      await mkdir(dirname(path), { recursive: true });
      const file = await open(temp, 'wx');
      try {
        await file.writeFile(data);
        await file.sync();
      } finally {
        await file.close();
      }
    });
    try {
      if (!options.ifAbsent) {
        await this.io(uri, () => rename(temp, path));
        return result;
      }
      try {
        await link(temp, path);
        return result;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw this.failure(error, uri);
      }
      const existing = await this.head(key);
      if (existing?.sha256 === sha256) return { ...result, created: false };
      throw new BlobExistsError(uri, `with sha256 ${existing?.sha256 ?? '(gone since)'}, not ${sha256}`);
    } finally {
      await unlink(temp).catch(() => undefined);
    }
  }

  async get(key: string, sha256: string): Promise<Buffer> {
    const path = this.path(key);
    const uri = pathToFileURL(path).href;
    checkSha256(sha256, `the digest expected of ${uri}`);
    return verifySha256(await this.io(uri, () => readFile(path)), sha256, uri);
  }

  async head(key: string): Promise<BlobHead | null> {
    const path = this.path(key);
    const uri = pathToFileURL(path).href;
    try {
      const info = await stat(path);
      if (!info.isFile()) return null;
      const hash = createHash('sha256');
      for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
      return { key, bytes: info.size, sha256: hash.digest('hex') };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
      throw this.failure(error, uri);
    }
  }

  async list(prefix: string): Promise<BlobInfo[]> {
    checkListPrefix(prefix);
    // Walk only the folder the prefix's complete parts name; the rest of the prefix filters names in it.
    const folder = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/')) : '';
    const start = folder === '' ? this.root : join(this.root, ...folder.split('/'));
    const names = await readdir(start, { recursive: true }).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return [] as string[];
      throw this.failure(error, pathToFileURL(start).href);
    });
    const found: BlobInfo[] = [];
    for (const name of names) {
      const key = relative(this.root, join(start, name)).split(sep).join('/');
      if (!key.startsWith(prefix) || key.split('/').some((part) => part.startsWith(TEMP))) continue;
      const info = await stat(join(start, name)).catch(() => null);
      if (info?.isFile()) found.push({ key, bytes: info.size });
    }
    return found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async delete(key: string): Promise<void> {
    const path = this.path(key);
    await this.io(pathToFileURL(path).href, () => rm(path, { force: true }));
  }

  async check(): Promise<void> {
    await this.io(this.location, () => mkdir(this.root, { recursive: true }));
  }

  close(): void {
    // Nothing is held open between calls.
  }

  private path(key: string): string {
    return join(this.root, ...checkBlobKey(key).split('/'));
  }

  private async io<T>(uri: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw this.failure(error, uri);
    }
  }

  /** A file-system error as the taxonomy has it: a missing file is BlobNotFoundError, the rest a StorageError (not retriable: a full or read-only disk stays so). */
  private failure(error: unknown, uri: string): Error {
    if (error instanceof ConfigError || error instanceof StorageError) return error;
    const code = (error as NodeJS.ErrnoException).code ?? 'EIO';
    if (code === 'ENOENT' || code === 'ENOTDIR') return new BlobNotFoundError(uri, error);
    return new StorageError(`${uri}: ${error instanceof Error ? error.message : String(error)}`, code, uri, { retriable: false, cause: error });
  }
}
