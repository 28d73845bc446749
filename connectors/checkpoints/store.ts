import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ConfigError, TrialrunError } from '../../schemas/index.js';

/** Where a checkpoint's bytes live and how to check them. */
export interface CheckpointArtifact {
  readonly uri: string;
  readonly sha256: string;
  readonly bytes: number;
  /** See `CheckpointArtifact.format` in schemas/policy-checkpoint.ts. */
  readonly format: string | null;
}

/** Raised when stored bytes do not match their digest: never retried, never loaded. */
export class ArtifactIntegrityError extends TrialrunError {}

/**
 * Policy artifacts by policy and version. A local folder today; an object store implements the same
 * three calls (put is write-once per version and digest, so a retried put is harmless).
 */
export interface CheckpointStore {
  /** `format` is recorded in the returned artifact (see CheckpointArtifact.format); null for the built-in policies. */
  put(policyId: string, version: number, data: Buffer, format?: string | null): Promise<CheckpointArtifact>;
  /** Reads and verifies the bytes against the artifact's sha256. */
  get(artifact: CheckpointArtifact): Promise<Buffer>;
  /** The stored versions; their format is null, since only the checkpoint record says what the bytes are. */
  list(policyId: string): Promise<Array<{ version: number; artifact: CheckpointArtifact }>>;
}

export const sha256Hex = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

const FILE = /^v(\d+)-([0-9a-f]{64})\.bin$/;

export class LocalCheckpointStore implements CheckpointStore {
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  async put(policyId: string, version: number, data: Buffer, format: string | null = null): Promise<CheckpointArtifact> {
    if (!/^[a-z0-9][a-z0-9._-]*$/.test(policyId)) throw new ConfigError(`policy id "${policyId}" is not usable as a folder name`);
    const sha256 = sha256Hex(data);
    const dir = join(this.root, policyId);
    await mkdir(dir, { recursive: true });
    const path = join(dir, `v${version}-${sha256}.bin`);
    // Write then rename: a reader never sees a partial artifact, and a crash leaves only a temp file.
    const temp = `${path}.tmp-${process.pid}`;
    await writeFile(temp, data);
    await rename(temp, path);
    return { uri: pathToFileURL(path).href, sha256, bytes: data.length, format };
  }

  async get(artifact: CheckpointArtifact): Promise<Buffer> {
    if (!artifact.uri.startsWith('file:')) throw new ConfigError(`the local checkpoint store cannot read ${artifact.uri}`);
    const data = await readFile(fileURLToPath(artifact.uri)).catch((error: unknown) => {
      throw new ArtifactIntegrityError(`checkpoint artifact ${artifact.uri} cannot be read: ${error instanceof Error ? error.message : String(error)}`);
    });
    const actual = sha256Hex(data);
    if (actual !== artifact.sha256) throw new ArtifactIntegrityError(`checkpoint artifact ${artifact.uri} fails its sha256 check (${actual} != ${artifact.sha256})`);
    return data;
  }

  async list(policyId: string): Promise<Array<{ version: number; artifact: CheckpointArtifact }>> {
    const dir = join(this.root, policyId);
    const files = await readdir(dir).catch(() => [] as string[]);
    const entries = [];
    for (const file of files) {
      const match = FILE.exec(file);
      if (!match) continue;
      const path = join(dir, file);
      const data = await readFile(path);
      entries.push({ version: Number(match[1]), artifact: { uri: pathToFileURL(path).href, sha256: match[2]!, bytes: data.length, format: null } });
    }
    return entries.sort((a, b) => a.version - b.version);
  }
}

/** Opens a store from a URI: `file:///path` or a plain path. Other schemes need their own implementation. */
export function openCheckpointStore(location: string): CheckpointStore {
  if (location.startsWith('file:')) return new LocalCheckpointStore(fileURLToPath(location));
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(location)) throw new ConfigError(`no checkpoint store for "${location.split(':')[0]}://" yet: implement CheckpointStore for it`);
  return new LocalCheckpointStore(location);
}
