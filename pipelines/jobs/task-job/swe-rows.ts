import { cp, mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import { SOURCE_FORMATS, TabularFiles, type RejectsFile } from '../../../connectors/files/index.js';
import { MAX_WORKSPACE_FILE_BYTES } from '../../../envs/index.js';
import { ConfigError, describeIssues, errorMessage, VerificationSpec, type FileTree } from '../../../schemas/index.js';
import { MissingColumn, Template } from './template.js';
import { gitSnapshot, readTree, runTool, treeChanges, type LocatedTask, type TaskTrees } from './workspace-trees.js';

/**
 * SWE-bench-style rows as workspace tasks. Each row names a repository on this machine and a commit in it; the
 * task starts from the tree at `base_commit`, its prompt is the problem statement, the files `test_patch` changes
 * are hidden (laid over the agent's files in the grading sandbox, as SWE-bench resets the test files and applies
 * the test patch before it runs them), `patch` is the reference solution, and the verdict is SWE-bench's: every
 * FAIL_TO_PASS and PASS_TO_PASS test must pass.
 */

/** One file of rows in a workspace job (`sweRows:`). */
export const SweRowsSource = z
  .object({
    /** A JSON Lines or Parquet file (or a glob of them), relative to the job file. */
    path: z.string().min(1),
    /** @default inferred from the file extension */
    format: z.enum(SOURCE_FORMATS).optional(),
    /**
     * Where a row's repository is on this machine: a template over its columns (`{column}`, `{column|slug}`)
     * giving a git repository folder, or a tarball (.tar, .tar.gz, .tgz) of one, relative to the rows file.
     * `mirrors/{repo}` serves SWE-bench's own rows (`repo: django/django`) from local clones.
     * @default '{repo_path}'
     */
    repository: z.string().min(1).default('{repo_path}'),
    /** The sandbox image recipe of these tasks (one with the repositories' dependencies). @default the environment's */
    image: z.string().min(1).optional(),
    /** Budget of one test run of the grading pytest, in ms. @default the verifier's */
    timeoutMs: z.number().int().min(1000).max(600_000).optional(),
    /** The reward shape of these tasks. @default binary */
    reward: VerificationSpec.shape.reward,
    /** Tags of every task, before `swe` and the row's repo (when it has one). @default none */
    tags: z.array(z.string().min(1)).default([]),
    /** @default 0 */
    priority: z.number().int().default(0),
    /** @default 'train' */
    split: z.enum(['train', 'eval']).default('train'),
    /** A longer row is rejected with its size (patches make SWE rows large). @default 8388608 (8 MiB) */
    maxRowBytes: z.number().int().min(1024).default(8 << 20),
  })
  .strict();
export type SweRowsSource = z.infer<typeof SweRowsSource>;

/** FAIL_TO_PASS and PASS_TO_PASS: SWE-bench stores them as JSON-encoded strings; real arrays are taken as they are. */
const TestIds = z.preprocess(
  (value, context) => {
    if (typeof value !== 'string') return value;
    try {
      return JSON.parse(value) as unknown;
    } catch (error) {
      context.addIssue({ code: 'custom', message: `is a string but not a JSON array of test ids: ${errorMessage(error)}` });
      return z.NEVER;
    }
  },
  z.array(z.string().trim().min(1, 'a test id is empty')),
);

/** The columns an SWE-bench row must have; the others (repo, hints_text, created_at, version, ...) are kept unread. */
export const SweRow = z
  .object({
    instance_id: z.string().trim().min(1),
    base_commit: z.string().regex(/^[0-9a-f]{7,40}$/i, 'must be a commit id (7 to 40 hex digits)'),
    patch: z.string().min(1),
    test_patch: z.string().min(1),
    problem_statement: z.string().trim().min(1),
    FAIL_TO_PASS: TestIds.refine((ids) => ids.length > 0, 'must list at least one test (the one the patch makes pass)'),
    PASS_TO_PASS: TestIds,
  })
  .loose();
export type SweRow = z.infer<typeof SweRow>;

/** A task id from an instance id: `django__django-11099` stays, other characters become `-`, all lower case. */
export const sweTaskId = (instanceId: string): string =>
  instanceId
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[^a-z0-9]+/, '');

/** What a row makes of a task before its trees are read: everything but the files. */
export function sweTaskHeader(row: SweRow, source: SweRowsSource): LocatedTask['entry'] {
  const firstLine = row.problem_statement.trim().split('\n')[0]!.trim();
  const repo = typeof row['repo'] === 'string' && row['repo'].trim() ? [row['repo'].trim()] : [];
  return {
    id: sweTaskId(row.instance_id),
    title: `${row.instance_id}: ${firstLine.length > 100 ? `${firstLine.slice(0, 99)}…` : firstLine}`,
    description: row.problem_statement,
    verification: {
      check: { kind: 'tests', runner: 'pytest', failToPass: [...new Set(row.FAIL_TO_PASS)], passToPass: [...new Set(row.PASS_TO_PASS)], ...(source.timeoutMs ? { timeoutMs: source.timeoutMs } : {}) },
      ...(source.reward ? { reward: source.reward } : {}),
    },
    ...(source.image ? { image: source.image } : {}),
    tags: [...source.tags, 'swe', ...repo],
    priority: source.priority,
    split: source.split,
  };
}

/** Parses one row; a problem names every field that is wrong. */
export function parseSweRow(value: unknown): { row: SweRow } | { problem: string } {
  const parsed = SweRow.safeParse(value);
  return parsed.success ? { row: parsed.data } : { problem: `not an SWE-bench row: ${describeIssues(parsed.error).join('; ')}` };
}

/** The files `after` adds or changes relative to `before`; a removed file is an error (an overlay cannot delete). */
export function changedFiles(before: FileTree, after: FileTree, what: string): FileTree {
  const { changed, deleted } = treeChanges(before, after);
  if (deleted.length > 0) throw new ConfigError(`${what} deletes ${deleted.slice(0, 3).join(', ')}${deleted.length > 3 ? ` and ${deleted.length - 3} more` : ''}; a task's files can only be added or changed over its tree`);
  return changed;
}

/**
 * The rows of a job's `sweRows` sources as located tasks, bad rows (unreadable, malformed) written to the
 * rejects file with their line. A task's trees are read when the job asks for them: its repository at
 * base_commit, with `patch` and `test_patch` applied in scratch copies; a missing commit, a patch that does
 * not apply or one that deletes files rejects that row alone. Tarballs are unpacked once per job; `close()`
 * removes what was unpacked.
 */
export class SweRowReader {
  private readonly unpacked = new Map<string, Promise<string>>();
  private scratch: string | null = null;

  constructor(
    private readonly baseDir: string,
    private readonly rejects: RejectsFile,
  ) {}

  async locate(sources: readonly SweRowsSource[]): Promise<LocatedTask[]> {
    const located: LocatedTask[] = [];
    if (sources.length === 0) return located;
    const files = await TabularFiles.open();
    try {
      for (const source of sources) {
        const repository = Template.compile(source.repository, 'sweRows.repository');
        for (const file of await files.expand(absolute(source.path, this.baseDir))) {
          await files.readRows(file, {
            ...(source.format ? { format: source.format } : {}),
            maxRowBytes: source.maxRowBytes,
            onReject: (reject) => this.rejects.add({ source: reject.file, row: reject.row, stage: 'read', reason: reject.reason }),
            onRows: (rows) => {
              for (const { row: line, value } of rows) {
                const parsed = parseSweRow(value);
                if ('problem' in parsed) {
                  this.rejects.add({ source: file, row: line, stage: 'read', reason: parsed.problem });
                  continue;
                }
                let repo: string;
                try {
                  repo = absolute(repository.render(value), dirname(file));
                } catch (error) {
                  if (!(error instanceof MissingColumn)) throw error;
                  this.rejects.add({ source: file, row: line, stage: 'read', reason: `sweRows.repository ${JSON.stringify(source.repository)}: ${error.message}`, taskId: sweTaskId(parsed.row.instance_id) });
                  continue;
                }
                const { row } = parsed;
                located.push({ entry: sweTaskHeader(row, source), source: file, row: line, rejectAs: 'unusable row', readTrees: () => this.trees(row, repo) });
              }
            },
          });
        }
      }
    } finally {
      files.close();
    }
    return located;
  }

  /** Removes the scratch folder (unpacked tarballs, patched copies). */
  async close(): Promise<void> {
    if (this.scratch !== null) await rm(this.scratch, { recursive: true, force: true });
    this.scratch = null;
    this.unpacked.clear();
  }

  /** The tree at base_commit, the files test_patch changes (hidden) and those patch changes (the reference). */
  private async trees(row: SweRow, repositoryPath: string): Promise<TaskTrees> {
    const repository = await this.repository(repositoryPath);
    await runTool('git', ['-C', repository, 'cat-file', '-e', `${row.base_commit}^{commit}`], 'looking up base_commit').catch((error: unknown) => {
      throw new ConfigError(`base_commit ${row.base_commit} is not a commit of the repository ${repositoryPath}`, { cause: error });
    });
    const work = await mkdtemp(join(await this.scratchDir(), 'row-'));
    try {
      const base = join(work, 'base');
      await mkdir(base);
      await gitSnapshot(repository, row.base_commit, base);
      const limits = { maxFileBytes: MAX_WORKSPACE_FILE_BYTES };
      const files = await readTree({ folder: base }, limits);
      const patched = async (patch: string, name: string): Promise<FileTree> => {
        const copy = join(work, name);
        await cp(base, copy, { recursive: true });
        await applyPatch(copy, patch, name);
        return changedFiles(files, await readTree({ folder: copy }, limits), name);
      };
      const solution = await patched(row.patch, 'patch');
      const hidden = await patched(row.test_patch, 'test_patch');
      if (Object.keys(solution).length === 0) throw new ConfigError('patch changes no file of the tree at base_commit');
      if (Object.keys(hidden).length === 0) throw new ConfigError('test_patch changes no file of the tree at base_commit');
      return { files, hidden, solution };
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  /** A git repository folder as it is; a tarball unpacked (once) to the repository it holds. */
  private repository(path: string): Promise<string> {
    if (!/\.(tar|tar\.gz|tgz)$/i.test(path)) {
      return stat(path).then(
        (found) => {
          if (!found.isDirectory()) throw new ConfigError(`the repository ${path} is neither a folder nor a tarball (.tar, .tar.gz, .tgz)`);
          return path;
        },
        (error: unknown) => {
          throw new ConfigError(`the repository ${path} cannot be read: ${errorMessage(error)}`);
        },
      );
    }
    let unpacking = this.unpacked.get(path);
    if (unpacking === undefined) {
      unpacking = (async () => {
        const into = await mkdtemp(join(await this.scratchDir(), 'repo-'));
        await runTool('tar', ['-xf', path, '-C', into, '--no-same-owner', '--no-same-permissions'], `unpacking the repository ${path}`);
        return repositoryIn(into, path);
      })();
      this.unpacked.set(path, unpacking);
    }
    return unpacking;
  }

  private async scratchDir(): Promise<string> {
    this.scratch ??= await mkdtemp(join(tmpdir(), 'trialrun-swe-'));
    return this.scratch;
  }
}

/** The repository an unpacked tarball holds: at its top, or in its one top-level folder (`tar -czf r.tgz repo/`). */
async function repositoryIn(folder: string, tarball: string): Promise<string> {
  const isRepository = async (dir: string): Promise<boolean> => (await readdir(dir)).some((name) => name === '.git' || name === 'HEAD');
  if (await isRepository(folder)) return folder;
  const entries = await readdir(folder, { withFileTypes: true });
  if (entries.length === 1 && entries[0]!.isDirectory() && (await isRepository(join(folder, entries[0]!.name)))) return join(folder, entries[0]!.name);
  throw new ConfigError(`the tarball ${tarball} holds no git repository (no .git at its top or in its one top-level folder): base_commit cannot be checked out`);
}

/**
 * Applies a unified diff to a folder as SWE-bench's harness does: `git apply`, and where that refuses, GNU
 * `patch` with fuzz. Git never looks above the folder for a repository of its own.
 */
async function applyPatch(folder: string, patch: string, name: string): Promise<void> {
  const env = { GIT_CEILING_DIRECTORIES: dirname(folder) };
  try {
    await runTool('git', ['apply', '--whitespace=nowarn', '-'], `applying ${name}`, { cwd: folder, stdin: patch, env });
  } catch (gitError) {
    if (!(gitError instanceof ConfigError)) throw gitError;
    try {
      await runTool('patch', ['--batch', '--fuzz=5', '-p1', '--forward', '--no-backup-if-mismatch', '--reject-file=-'], `applying ${name} with patch`, { cwd: folder, stdin: patch });
    } catch {
      throw new ConfigError(`${name} does not apply to the tree at base_commit: ${gitError.message}`);
    }
  }
}

const absolute = (path: string, baseDir: string): string => (isAbsolute(path) ? path : resolve(baseDir, path));
