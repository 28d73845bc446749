import { isAbsolute, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ArtifactIntegrityError, BlobExistsError, ConfigError } from '../../schemas/index.js';
import { LocalBlobStore, openBlobStore, type BlobStore, type S3StoreOptions } from '../storage/index.js';

export { ArtifactIntegrityError } from '../../schemas/index.js';
export { sha256Hex } from '../storage/index.js';

/** Where a checkpoint's bytes live and how to check them. */
export interface CheckpointArtifact {
  readonly uri: string;
  readonly sha256: string;
  readonly bytes: number;
  /** See `CheckpointArtifact.format` in schemas/policy-checkpoint.ts. */
  readonly format: string | null;
}

/**
 * Policy artifacts by policy and version, on the storage port: a local folder (the default) or S3. A version is
 * written once: of two learners publishing the same version, one wins and the other gets a BlobExistsError; a put
 * retried with the same bytes is harmless.
 */
export interface CheckpointStore {
  /** `format` is recorded in the returned artifact (see CheckpointArtifact.format); null for the built-in policies. */
  put(policyId: string, version: number, data: Buffer, format?: string | null): Promise<CheckpointArtifact>;
  /** Reads and verifies the bytes against the artifact's sha256. */
  get(artifact: CheckpointArtifact): Promise<Buffer>;
  /** The stored versions; their format is null, since only the checkpoint record says what the bytes are. */
  list(policyId: string): Promise<Array<{ version: number; artifact: CheckpointArtifact }>>;
}

/** `<policy>/v<N>.bin`, what this store writes; `v<N>-<sha256>.bin`, what the Python LLM learner writes to a local folder. */
const VERSION_KEY = /^v(\d+)\.bin$/;
const LEGACY_KEY = /^v(\d+)-([0-9a-f]{64})\.bin$/;

/** Checkpoints as `<policyId>/v<version>.bin` in a BlobStore, each created once (a conditional create). */
export class BlobCheckpointStore implements CheckpointStore {
  constructor(readonly blobs: BlobStore) {}

  async put(policyId: string, version: number, data: Buffer, format: string | null = null): Promise<CheckpointArtifact> {
    if (!/^[a-z0-9][a-z0-9._-]*$/.test(policyId)) throw new ConfigError(`policy id "${policyId}" is not usable as a folder name`);
    if (!Number.isSafeInteger(version) || version < 0) throw new ConfigError(`checkpoint version ${version} is not a whole number >= 0`);
    try {
      const put = await this.blobs.put(`${policyId}/v${version}.bin`, data, { ifAbsent: true });
      return { uri: put.uri, sha256: put.sha256, bytes: put.bytes, format };
    } catch (error) {
      if (error instanceof BlobExistsError) throw new BlobExistsError(error.object, `: version ${version} of ${policyId} was published with other bytes (write-once per version)`, error);
      throw error;
    }
  }

  async get(artifact: CheckpointArtifact): Promise<Buffer> {
    const key = this.keyOf(artifact.uri);
    if (key !== null) return this.blobs.get(key, artifact.sha256);
    // A file: artifact from outside this store's folder (the Python learner's, an older run's): read where it is.
    if (artifact.uri.startsWith('file:') && this.blobs instanceof LocalBlobStore) {
      const path = fileURLToPath(artifact.uri);
      const folder = path.slice(0, path.lastIndexOf(sep));
      return new LocalBlobStore(folder).get(path.slice(folder.length + 1), artifact.sha256);
    }
    throw new ConfigError(`checkpoint artifact ${artifact.uri} is not in this process's checkpoint store ${this.blobs.location}; point TRIALRUN_CHECKPOINTS at the store its learner publishes to`);
  }

  async list(policyId: string): Promise<Array<{ version: number; artifact: CheckpointArtifact }>> {
    const entries = [];
    for (const blob of await this.blobs.list(`${policyId}/`)) {
      const name = blob.key.slice(policyId.length + 1);
      const legacy = LEGACY_KEY.exec(name);
      const current = VERSION_KEY.exec(name);
      if (!legacy && !current) continue;
      const sha256 = legacy ? legacy[2]! : (await this.blobs.head(blob.key))?.sha256;
      if (!sha256) continue; // deleted since, or put by something that recorded no digest: not a checkpoint of ours
      entries.push({ version: Number((legacy ?? current)![1]), artifact: { uri: this.blobs.uri(blob.key), sha256, bytes: blob.bytes, format: null } });
    }
    return entries.sort((a, b) => a.version - b.version);
  }

  /** The key of a URI inside this store, or null for one elsewhere. */
  private keyOf(uri: string): string | null {
    if (this.blobs instanceof LocalBlobStore) {
      if (!uri.startsWith('file:')) return null;
      const rest = relative(this.blobs.root, fileURLToPath(uri));
      return rest === '' || rest.startsWith('..') || isAbsolute(rest) ? null : rest.split(sep).join('/');
    }
    const base = `${this.blobs.location}/`;
    return uri.startsWith(base) ? uri.slice(base.length) : null;
  }
}

/** The local-folder checkpoint store (the embedded default). */
export class LocalCheckpointStore extends BlobCheckpointStore {
  readonly root: string;

  constructor(root: string) {
    const blobs = new LocalBlobStore(root);
    super(blobs);
    this.root = blobs.root;
  }
}

/**
 * Opens a store from a location: `s3://bucket/prefix` (checked here, before anything connects), `file:///path` or a
 * plain path. `option` names the setting the location came from, for the error.
 */
export function openCheckpointStore(location: string, option = 'TRIALRUN_CHECKPOINTS', s3: S3StoreOptions = {}): CheckpointStore {
  return new BlobCheckpointStore(openBlobStore(location, option, s3));
}

