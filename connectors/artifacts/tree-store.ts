import { LocalBlobStore, openBlobStore, sha256Hex, type BlobStore, type S3StoreOptions } from '../storage/index.js';
import { ConfigError, mapLimit, type FileTree, type Task, type TaskTreeField, type TreeRef } from '../../schemas/index.js';

/**
 * File trees by content (the claim-check store): each file is a blob named by its sha256, each tree a
 * manifest (path -> blob digest) named by its own. Trees that share files share blobs, so a final workspace that
 * differs from its 50 MB starting tree in one file costs one blob and a manifest. Lives on the storage port: a
 * local folder (the default) or S3; puts are idempotent by construction.
 */
export interface TreeStore {
  put(tree: FileTree): Promise<TreeRef>;
  /** Reads the tree, checking every blob and the manifest against their digests. */
  get(ref: TreeRef): Promise<FileTree>;
  /** Resolves while the store answers; a ConfigError naming what is wrong when it does not (BlobStore.check). */
  check(): Promise<void>;
}

const HEX = /^sha256:([0-9a-f]{64})$/;
/** Requests in flight at once for one tree: enough to hide an object store's round trips, few enough for a small host. */
const CONCURRENCY = 16;

/**
 * Trees as `blobs/<ab>/<sha256>` and `trees/<ab>/<sha256>` in a BlobStore (the layout the local store has always
 * had). A digest already stored is not uploaded again: a tree whose manifest is there is skipped whole, and of a
 * new tree only the blobs the store lacks (asked with head) are sent.
 */
export class BlobTreeStore implements TreeStore {
  constructor(readonly blobs: BlobStore) {}

  check(): Promise<void> {
    return this.blobs.check();
  }

  async put(tree: FileTree): Promise<TreeRef> {
    const manifest: Record<string, string> = {};
    const contents = new Map<string, Buffer>();
    let bytes = 0;
    for (const path of Object.keys(tree).sort()) {
      const content = Buffer.from(tree[path]!, 'utf8');
      const digest = sha256Hex(content);
      manifest[path] = digest;
      contents.set(digest, content);
      bytes += content.length;
    }
    const body = Buffer.from(JSON.stringify(manifest));
    const digest = sha256Hex(body);
    const ref = { digest: `sha256:${digest}`, files: Object.keys(manifest).length, bytes };
    if (await this.blobs.head(key('trees', digest))) return ref;
    await mapLimit([...contents], CONCURRENCY, async ([blob, content]) => {
      const stored = await this.blobs.head(key('blobs', blob));
      if (!stored) await this.blobs.put(key('blobs', blob), content, { sha256: blob, ifAbsent: true });
      // A blob whose bytes no longer match its name (damaged on disk) is replaced by the right ones, not trusted.
      else if (stored.sha256 !== null && stored.sha256 !== blob) await this.blobs.put(key('blobs', blob), content, { sha256: blob });
    });
    // The manifest last: once it is there, every blob it names is too.
    await this.blobs.put(key('trees', digest), body, { sha256: digest, ifAbsent: true });
    return ref;
  }

  async get(ref: TreeRef): Promise<FileTree> {
    const match = HEX.exec(ref.digest);
    if (!match) throw new ConfigError(`tree reference ${JSON.stringify(ref.digest)} is not a sha256 digest`);
    const manifest = JSON.parse((await this.blobs.get(key('trees', match[1]!), match[1]!)).toString('utf8')) as Record<string, string>;
    const contents = new Map<string, string>();
    await mapLimit([...new Set(Object.values(manifest))], CONCURRENCY, async (digest) => {
      contents.set(digest, (await this.blobs.get(key('blobs', digest), digest)).toString('utf8'));
    });
    const tree: FileTree = {};
    for (const [path, digest] of Object.entries(manifest)) tree[path] = contents.get(digest)!;
    return tree;
  }
}

const key = (kind: 'blobs' | 'trees', digest: string): string => `${kind}/${digest.slice(0, 2)}/${digest}`;

/** The local-folder tree store (the embedded default). */
export class LocalTreeStore extends BlobTreeStore {
  readonly root: string;

  constructor(root: string) {
    const blobs = new LocalBlobStore(root);
    super(blobs);
    this.root = blobs.root;
  }
}

/** Opens a store from a location: `s3://bucket/prefix` (checked here), `file:///path` or a plain path; `option` names the setting for the error. */
export function openTreeStore(location: string, option = 'TRIALRUN_ARTIFACTS', s3: S3StoreOptions = {}): TreeStore {
  return new BlobTreeStore(openBlobStore(location, option, s3));
}

/** UTF-8 bytes of a tree's contents. */
export const treeBytes = (tree: FileTree): number => Object.values(tree).reduce((sum, content) => sum + Buffer.byteLength(content), 0);

/**
 * What a tree adds to a record inline: its JSON, names and escapes included; the measure the claim-check thresholds
 * apply to. 16,000 empty files have no content and are 400 KB of record.
 */
export const inlineTreeBytes = (tree: FileTree): number => Buffer.byteLength(JSON.stringify(tree));

const TREE_FIELDS: readonly TaskTreeField[] = ['files', 'visibleTests', 'hiddenTests', 'referenceSolution'];

/** A task whose trees above `thresholdBytes` are in the store, each replaced by `{}` and a `stored` reference. */
export async function storeLargeTrees(task: Task, store: TreeStore, thresholdBytes: number): Promise<Task> {
  const stored: NonNullable<Task['stored']> = { ...task.stored };
  const trees: Partial<Record<TaskTreeField, FileTree>> = {};
  for (const field of TREE_FIELDS) {
    const tree = task[field];
    if (!tree || inlineTreeBytes(tree) <= thresholdBytes) continue;
    stored[field] = await store.put(tree);
    trees[field] = {};
  }
  return Object.keys(trees).length === 0 ? task : { ...task, ...trees, stored };
}

/** The task with every stored tree read back inline; a task without claim checks is returned as it is. */
export async function resolveStoredTrees(task: Task, store: TreeStore | null): Promise<Task> {
  const entries = Object.entries(task.stored ?? {}) as Array<[TaskTreeField, TreeRef]>;
  if (entries.length === 0) return task;
  if (!store) throw new ConfigError(`task ${task.taskId} keeps ${entries.map(([field]) => field).join(', ')} in the artifact store, and this process has none configured`);
  const resolved: Partial<Record<TaskTreeField, FileTree>> = {};
  for (const [field, ref] of entries) resolved[field] = await store.get(ref);
  return { ...task, ...resolved, stored: undefined };
}
