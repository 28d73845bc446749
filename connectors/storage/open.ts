import { fileURLToPath } from 'node:url';
import { ConfigError, isS3Url } from '../../schemas/index.js';
import type { BlobStore } from './blob-store.js';
import { LocalBlobStore } from './local/local-blob-store.js';
import { S3BlobStore } from './s3/s3-blob-store.js';
import type { S3StoreOptions } from './s3/options.js';

/**
 * The store a location names: `s3://bucket/prefix` (S3, checked here: a malformed URL is a ConfigError naming
 * `option`), `file:///path` or a plain path (a local folder). Any other scheme is refused by name.
 */
export function openBlobStore(location: string, option: string, s3: S3StoreOptions = {}): BlobStore {
  if (isS3Url(location)) return new S3BlobStore(location, s3, option);
  if (location.startsWith('file:')) return new LocalBlobStore(fileURLToPath(location));
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(location)) throw new ConfigError(`${option}: no store for "${location.split(':')[0]}://" locations (s3:// and local folders are)`);
  return new LocalBlobStore(location);
}
