import { isAbsolute, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../../schemas/index.js';
import { LocalBlobStore, openBlobStore, sha256Hex, type BlobStore, type S3StoreOptions } from '../storage/index.js';

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
 * Policy artifacts by policy and version, on the storage port: a local folder (the default) or S3. An artifact is
 * written once and never replaced (a conditional create of `<policy>/v<N>-<sha256>.bin`), so the bytes a committed
 * checkpoint record points to cannot change under its readers, whoever writes later; a put retried with the same
 * bytes is harmless. Which bytes are version N is decided by the one Kafka transaction that commits its record
 * (the learner's lease fences a zombie): a learner killed between the put and that commit leaves an unreferenced
 * artifact, and its successor's redo of the update, whose bytes may differ, is stored beside it, not refused.
 */
export interface CheckpointStore {
  /** `format` is recorded in the returned artifact (see CheckpointArtifact.format); null for the built-in policies. */
  put(policyId: string, version: number, data: Buffer, format?: string | null): Promise<CheckpointArtifact>;
  /** Reads and verifies the bytes against the artifact's sha256. */
  get(artifact: CheckpointArtifact): Promise<Buffer>;
  /** The stored versions; their format is null, since only the checkpoint record says what the bytes are. */
  list(policyId: string): Promise<Array<{ version: number; artifact: CheckpointArtifact }>>;
  /** Resolves while the store answers; a ConfigError naming what is wrong when it does not (BlobStore.check). */
  check(): Promise<void>;
  /** Releases the store's connections (BlobStore.close); it is not used after. */
  close(): void;
}

/** `<policy>/v<N>-<sha256>.bin`, what this store and the Python LLM learner (in a local folder) write. */
const ARTIFACT_KEY = /^v(\d+)-([0-9a-f]{64})\.bin$/;

/** Checkpoints as `<policyId>/v<version>-<sha256>.bin` in a BlobStore, each created once (a conditional create). */
export class BlobCheckpointStore implements CheckpointStore {
  constructor(readonly blobs: BlobStore) {}

  check(): Promise<void> {
    return this.blobs.check();
  }

  close(): void {
    this.blobs.close();
  }

  async put(policyId: string, version: number, data: Buffer, format: string | null = null): Promise<CheckpointArtifact> {
    if (!/^[a-z0-9][a-z0-9._-]*$/.test(policyId)) throw new ConfigError(`policy id "${policyId}" is not usable as a folder name`);
    if (!Number.isSafeInteger(version) || version < 0) throw new ConfigError(`checkpoint version ${version} is not a whole number >= 0`);
    const sha256 = sha256Hex(data);
    const put = await this.blobs.put(`${policyId}/v${version}-${sha256}.bin`, data, { sha256, ifAbsent: true });
    return { uri: put.uri, sha256, bytes: put.bytes, format };
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
      const match = ARTIFACT_KEY.exec(blob.key.slice(policyId.length + 1));
      if (match) entries.push({ version: Number(match[1]), artifact: { uri: this.blobs.uri(blob.key), sha256: match[2]!, bytes: blob.bytes, format: null } });
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

