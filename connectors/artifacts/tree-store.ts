import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ArtifactIntegrityError } from '../checkpoints/index.js';
import { ConfigError, type FileTree, type Task, type TaskTreeField, type TreeRef } from '../../schemas/index.js';

/**
 * File trees by content (the claim-check store): each file is a blob named by its sha256, each tree a
 * manifest (path -> blob digest) named by its own. Trees that share files share blobs, so a final workspace that
 * differs from its 50 MB starting tree in one file costs one blob and a manifest. A local folder today; an object
 * store implements the same two calls (puts are idempotent by construction).
 */
export interface TreeStore {
  put(tree: FileTree): Promise<TreeRef>;
  /** Reads the tree, checking every blob and the manifest against their digests. */
  get(ref: TreeRef): Promise<FileTree>;
}

const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');
const HEX = /^sha256:([0-9a-f]{64})$/;

export class LocalTreeStore implements TreeStore {
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  async put(tree: FileTree): Promise<TreeRef> {
    const manifest: Record<string, string> = {};
    let bytes = 0;
    for (const path of Object.keys(tree).sort()) {
      const content = Buffer.from(tree[path]!, 'utf8');
      const digest = sha256(content);
      await this.write('blobs', digest, content);
      manifest[path] = digest;
      bytes += content.length;
    }
    const body = Buffer.from(JSON.stringify(manifest));
    const digest = sha256(body);
    await this.write('trees', digest, body);
    return { digest: `sha256:${digest}`, files: Object.keys(manifest).length, bytes };
  }

  async get(ref: TreeRef): Promise<FileTree> {
    const match = HEX.exec(ref.digest);
    if (!match) throw new ConfigError(`tree reference ${JSON.stringify(ref.digest)} is not a sha256 digest`);
    const manifest = JSON.parse((await this.read('trees', match[1]!)).toString('utf8')) as Record<string, string>;
    const tree: FileTree = {};
    for (const [path, digest] of Object.entries(manifest)) tree[path] = (await this.read('blobs', digest)).toString('utf8');
    return tree;
  }

  /** Write-once by digest: an existing object is kept; a new one appears whole (write, then rename). */
  private async write(kind: 'blobs' | 'trees', digest: string, data: Buffer): Promise<void> {
    const dir = join(this.root, kind, digest.slice(0, 2));
    const path = join(dir, digest);
    if (await stat(path).then(() => true, () => false)) return;
    await mkdir(dir, { recursive: true });
    const temp = `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
    await writeFile(temp, data);
    await rename(temp, path);
  }

  private async read(kind: 'blobs' | 'trees', digest: string): Promise<Buffer> {
    const path = join(this.root, kind, digest.slice(0, 2), digest);
    const data = await readFile(path).catch((error: unknown) => {
      throw new ArtifactIntegrityError(`${kind === 'trees' ? 'tree manifest' : 'blob'} sha256:${digest} is not in the artifact store at ${this.root}: ${error instanceof Error ? error.message : String(error)}`);
    });
    if (sha256(data) !== digest) throw new ArtifactIntegrityError(`${kind === 'trees' ? 'tree manifest' : 'blob'} sha256:${digest} in ${this.root} fails its sha256 check`);
    return data;
  }
}

/** Opens a store from a URI: `file:///path` or a plain path. Other schemes need their own implementation. */
export function openTreeStore(location: string): TreeStore {
  if (location.startsWith('file:')) return new LocalTreeStore(fileURLToPath(location));
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(location)) throw new ConfigError(`no artifact store for "${location.split(':')[0]}://" yet: implement TreeStore for it`);
  return new LocalTreeStore(location);
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
