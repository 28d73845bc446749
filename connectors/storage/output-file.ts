import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ConfigError, isS3Url, parseS3Url } from '../../schemas/index.js';
import { S3BlobStore } from './s3/s3-blob-store.js';
import type { S3StoreOptions } from './s3/options.js';

/**
 * A file a job writes as it goes (JSON Lines, appended and sorted in place) whose destination may be an object: a
 * local path is written where it is; for `s3://bucket/key` the job writes a staging file in a temporary folder, and
 * `publish` puts it through the storage port whole when the job is done, so no reader ever sees part of it.
 */
export interface OutputFile {
  /** Where to write: the destination itself, or the staging file. */
  readonly path: string;
  /** Where the file ends up: the local path, or the object's URI. */
  readonly destination: string;
  /** Fails at once, naming the option, when an `s3://` destination's bucket does not answer; a local path needs no check. */
  check(): Promise<void>;
  /** Hands the finished file to its destination (an object replaces one of the same name, as a local file would); returns the destination. */
  publish(): Promise<string>;
  /** Removes the staging file and releases the store; a file not yet published is not sent. */
  close(): void;
}

/** `name` inside a location: a folder (joined as a path) or an `s3://bucket/prefix` (joined with '/'). */
export function locationChild(location: string, name: string): string {
  return isS3Url(location) ? `${location.replace(/\/+$/, '')}/${name}` : join(location, name);
}

/**
 * The output file for `destination`: a local path, or `s3://bucket/key` (checked here: a malformed URL, or one that
 * names no object, is a ConfigError naming `option`).
 */
export function outputFile(destination: string, option: string, s3: S3StoreOptions = {}): OutputFile {
  if (!isS3Url(destination)) {
    const path = resolve(destination);
    return { path, destination: path, check: async () => undefined, publish: async () => path, close: () => undefined };
  }
  const { bucket, prefix } = parseS3Url(destination, option);
  const slash = prefix.lastIndexOf('/');
  const name = prefix.slice(slash + 1);
  if (name === '') throw new ConfigError(`${option}: ${destination} names a bucket, not an object (s3://<bucket>/<key>)`);
  const store = new S3BlobStore(`s3://${bucket}/${prefix.slice(0, Math.max(slash, 0))}`, s3, option);
  const staging = mkdtempSync(join(tmpdir(), 'trialrun-output-'));
  const path = join(staging, name);
  const uri = store.uri(name);
  return {
    path,
    destination: uri,
    check: () => store.check(),
    async publish() {
      // Read whole: the port puts a buffer (multipart above its threshold). Job outputs are what a job held in memory anyway.
      await store.put(name, readFileSync(path));
      return uri;
    },
    close() {
      store.close();
      rmSync(staging, { recursive: true, force: true });
    },
  };
}
