import { spawn } from 'node:child_process';
import { lstat, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { ConfigError, type FileTree, type Task, type VerificationSpec } from '../../../schemas/index.js';

/** Where a task's tree comes from: a folder, a tarball (.tar, .tar.gz, .tgz), or a local git repository at a commit. */
export type TreeSource = { readonly folder: string } | { readonly tarball: string } | { readonly git: string; readonly commit: string };

/** A task's trees: what the agent starts from, what only grading sees, and the reference solution's files. */
export interface TaskTrees {
  readonly files: FileTree;
  readonly hidden: FileTree;
  readonly solution: FileTree | null;
  /** The image these trees were prepared in (a Harbor task's own, built from its environment/). @default the entry's */
  readonly image?: string;
}

/** A workspace task as a job finds it (in the job file, a task folder, a row), its trees read when asked. */
export interface LocatedTask {
  readonly entry: {
    readonly id: string;
    readonly title: string;
    readonly description: string;
    readonly verification?: VerificationSpec;
    readonly image?: string;
    readonly tags: readonly string[];
    readonly priority: number;
    readonly split: 'train' | 'eval';
  };
  /** The file it came from and its 1-based row there, for the rejects file. */
  readonly source: string;
  readonly row: number;
  /** Reads its trees; a ConfigError rejects this task alone, counted under `rejectAs`. */
  readonly readTrees: () => Promise<TaskTrees>;
  /** The rejects category of a task whose trees cannot be read. */
  readonly rejectAs: string;
  /** The sandbox's cpus and memory (a Harbor task.toml's). @default the environment's */
  readonly limits?: Task['limits'];
}

export interface ReadTreeOptions {
  /** Folder names never read, wherever they are. @default ['.git', '__pycache__', '.pytest_cache'] */
  readonly skipDirs?: readonly string[];
  /** A larger file is refused by name (the sandbox snapshot carries no more). */
  readonly maxFileBytes: number;
}

const DEFAULT_SKIP = ['.git', '__pycache__', '.pytest_cache'];
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** A tree read from its source; every file that cannot travel as UTF-8 text in a FileTree is refused by name. */
export async function readTree(source: TreeSource, options: ReadTreeOptions): Promise<FileTree> {
  if ('folder' in source) return readFolder(source.folder, options);
  const scratch = await mkdtemp(join(tmpdir(), 'trialrun-tree-'));
  try {
    if ('tarball' in source) await runTool('tar', ['-xf', source.tarball, '-C', scratch, '--no-same-owner', '--no-same-permissions'], `unpacking ${source.tarball}`);
    else await gitSnapshot(source.git, source.commit, scratch);
    return await readFolder(scratch, options);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

async function readFolder(root: string, options: ReadTreeOptions): Promise<FileTree> {
  const skip = new Set(options.skipDirs ?? DEFAULT_SKIP);
  const tree: FileTree = {};
  const walk = async (dir: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (error) {
      throw new ConfigError(`cannot read the folder ${dir}: ${error instanceof Error ? error.message : String(error)}`);
    }
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const path = join(dir, entry.name);
      const name = relative(root, path).split(sep).join('/');
      if (entry.isDirectory()) {
        if (!skip.has(entry.name)) await walk(path);
      } else if (entry.isFile()) {
        const { size } = await lstat(path);
        if (size > options.maxFileBytes) throw new ConfigError(`${name} in ${root} is ${size} bytes; a workspace file may hold at most ${options.maxFileBytes}`);
        try {
          tree[name] = UTF8.decode(await readFile(path));
        } catch {
          throw new ConfigError(`${name} in ${root} is not UTF-8 text; a workspace tree carries text files only`);
        }
      } else {
        throw new ConfigError(`${name} in ${root} is ${entry.isSymbolicLink() ? 'a symlink' : 'not a regular file or folder'}; a workspace tree carries regular files only`);
      }
    }
  };
  await walk(root);
  return tree;
}

/** `git archive <commit>` of a local repository, unpacked: the tree exactly as committed, nothing uncommitted. */
export async function gitSnapshot(repository: string, commit: string, into: string): Promise<void> {
  if (!/^[0-9a-f]{4,40}$/i.test(commit) && !/^[\w./-]+$/.test(commit)) throw new ConfigError(`git commit ${JSON.stringify(commit)} is not a commit id or ref`);
  const archive = join(into, '..', `${into.split(sep).pop()}.tar`);
  try {
    await runTool('git', ['-C', repository, 'archive', '--format=tar', `--output=${archive}`, `${commit}^{commit}`], `archiving ${repository} at ${commit}`);
    await runTool('tar', ['-xf', archive, '-C', into], `unpacking the archive of ${repository}`);
  } finally {
    await rm(archive, { force: true });
  }
}

export interface RunToolOptions {
  /** @default the process's working directory */
  readonly cwd?: string;
  /** Written to the tool's standard input. @default nothing */
  readonly stdin?: string;
  /** Added to the process's environment. @default nothing */
  readonly env?: Readonly<Record<string, string>>;
}

/** Runs a local tool (git, tar, patch); a failure is a ConfigError saying what was being done and the tool's last words. */
export function runTool(command: string, args: readonly string[], what: string, options: RunToolOptions = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], cwd: options.cwd, env: options.env ? { ...process.env, ...options.env } : process.env });
    let output = '';
    const keep = (chunk: Buffer): void => void (output = (output + chunk.toString()).slice(-2000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', (error) => reject(new ConfigError(`${what}: cannot run ${command}: ${error.message}`)));
    child.on('close', (code) => (code === 0 ? resolve() : reject(new ConfigError(`${what} failed (exit ${code}): ${output.trim() || 'no message'}`))));
    // A tool that exits before reading all of its input closes the pipe: its exit status tells what happened.
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.stdin ?? '');
  });
}

/** What `after` adds or changes relative to `before` (whole files), and what it deletes. */
export function treeChanges(before: FileTree, after: FileTree): { readonly changed: FileTree; readonly deleted: string[] } {
  return {
    changed: Object.fromEntries(Object.entries(after).filter(([path, text]) => before[path] !== text)),
    deleted: Object.keys(before).filter((path) => !(path in after)),
  };
}
