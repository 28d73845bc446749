import type { Duplex } from 'node:stream';
import { ConfigError, finiteNumber, wholeNumber, type FileTree, type WorkspaceExtras } from '../../schemas/index.js';

/** Resource limits of one sandbox. */
export interface SandboxLimits {
  /** CPU cores (fractional allowed). @default 1 */
  cpus?: number;
  /** Memory in bytes; swap is disabled (memory-swap = memory). @default 512 MiB */
  memoryBytes?: number;
  /** Maximum processes and threads. @default 128 */
  pids?: number;
  /** Open files per process. @default 256 */
  openFiles?: number;
  /** Largest file a process may write. @default 32 MiB */
  fileSizeBytes?: number;
  /** Size of the writable /workspace (tmpfs). @default 64 MiB */
  workspaceBytes?: number;
  /** Size of /tmp (tmpfs). @default 64 MiB */
  tmpBytes?: number;
  /**
   * Files and folders /workspace may hold (tmpfs `nr_inodes`): past it, creating one fails with ENOSPC. Every
   * inode costs kernel memory charged to the sandbox, so without this cap a loop creating empty files ends
   * in the OOM killer taking the whole sandbox (about half a million files in 512 MiB) rather than in an
   * error the code can see. The process backend applies it only as root (see docs/sandbox.md). @default 16384
   */
  workspaceInodes?: number;
  /** Files and folders /tmp may hold (tmpfs `nr_inodes`), as workspaceInodes. @default 16384 */
  tmpInodes?: number;
}

export type ResolvedSandboxLimits = Readonly<Required<SandboxLimits>>;

/** The sandbox's writable working folder (a sized tmpfs), where commands start by default. */
export const WORKSPACE = '/workspace';

const DEFAULT_LIMITS: ResolvedSandboxLimits = {
  cpus: 1,
  memoryBytes: 512 * 1024 * 1024,
  pids: 128,
  openFiles: 256,
  fileSizeBytes: 32 * 1024 * 1024,
  workspaceBytes: 64 * 1024 * 1024,
  tmpBytes: 64 * 1024 * 1024,
  workspaceInodes: 16_384,
  tmpInodes: 16_384,
};

/**
 * Limits for a sandbox that must hold a workspace of `treeBytes` (a large repository task): the defaults when
 * they fit it with room to spare, else a /workspace three times the tree (the agent's changes, build output)
 * and the memory to back it, since tmpfs pages count against the sandbox's memory. A task's own request (`Task.limits`,
 * from a Harbor task.toml) sets the CPUs and raises the memory. Undefined: the defaults.
 */
export function limitsForWorkspace(treeBytes: number, requested: Pick<SandboxLimits, 'cpus' | 'memoryBytes'> = {}): SandboxLimits | undefined {
  const workspaceBytes = 3 * treeBytes + 16 * 1024 * 1024;
  const sized: SandboxLimits | undefined =
    workspaceBytes <= DEFAULT_LIMITS.workspaceBytes ? undefined : { workspaceBytes, memoryBytes: Math.max(DEFAULT_LIMITS.memoryBytes, workspaceBytes + 256 * 1024 * 1024) };
  if (requested.cpus === undefined && requested.memoryBytes === undefined) return sized;
  const memoryBytes = Math.max(sized?.memoryBytes ?? 0, requested.memoryBytes ?? 0);
  return { ...sized, ...(requested.cpus === undefined ? {} : { cpus: requested.cpus }), ...(memoryBytes > 0 ? { memoryBytes } : {}) };
}

/** Smallest accepted value per limit: below these the agent and a python3 cannot even start. */
const LIMIT_MINIMUMS: ResolvedSandboxLimits = {
  cpus: 0.01,
  memoryBytes: 16 * 1024 * 1024,
  pids: 8,
  openFiles: 16,
  fileSizeBytes: 1024 * 1024,
  workspaceBytes: 1024 * 1024,
  tmpBytes: 1024 * 1024,
  workspaceInodes: 64,
  tmpInodes: 64,
};

export function resolveSandboxLimits(limits: SandboxLimits = {}): ResolvedSandboxLimits {
  const resolved: Record<string, number> = { ...DEFAULT_LIMITS };
  for (const [name, value] of Object.entries(limits)) {
    if (!(name in DEFAULT_LIMITS)) throw new ConfigError(`SandboxLimits has no field ${name} (known: ${Object.keys(DEFAULT_LIMITS).join(', ')})`);
    if (value !== undefined) resolved[name] = value;
  }
  for (const [name, value] of Object.entries(resolved)) {
    const minimum = LIMIT_MINIMUMS[name as keyof SandboxLimits];
    // cpus may be a fraction of a CPU; every other limit is a count.
    (name === 'cpus' ? finiteNumber : wholeNumber)(`SandboxLimits.${name}`, value, { min: minimum });
  }
  return Object.freeze(resolved as Required<SandboxLimits>);
}

export interface ExecOptions {
  /** Wall-clock budget; the whole process tree is killed at the deadline and the result says `timeout`. @default 30000 */
  timeoutMs?: number;
  /** Bytes fed to the command's stdin, which is then closed. @default none (stdin is empty) */
  stdin?: string | Buffer;
  /** Added to the image's environment. @default {} */
  env?: Readonly<Record<string, string>>;
  /** @default '/workspace' */
  cwd?: string;
  /** Bytes kept per stream (half from the head, half from the tail). @default 64 KiB */
  maxOutputBytes?: number;
  /** Cancels the command; it is killed as on timeout. @default none */
  signal?: AbortSignal;
  /**
   * Modules to hold warm: a command `python3 -m module ...` or `python3 script.py ...` is then forked from an
   * interpreter that imported these once per sandbox (per environment), instead of a fresh python3 that imports
   * them again; any other command starts as usual. Where start-up dominates (`import pytest` costs more CPU than
   * a small test run) this is most of a run's cost. Each run is still its own process, session and subtree.
   * A module the warm interpreter already holds is not imported again from the command's folder: a file there
   * that shadows one (a `random.py`, say) is not picked up, as it would be by a fresh python3.
   * @default [] (every command starts fresh)
   */
  preload?: readonly string[];
}

export interface ResolvedExecOptions {
  readonly timeoutMs: number;
  readonly stdin: Buffer | null;
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly maxOutputBytes: number;
  readonly signal: AbortSignal | null;
  readonly preload: readonly string[];
}

const MAX_TIMEOUT_MS = 24 * 3600_000;
const MAX_OUTPUT_BYTES = 64 * 1024 * 1024;
const MODULE_NAME = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

/** Checks a command and its options before anything reaches the sandbox; errors name the bad field. */
export function resolveExecOptions(command: readonly string[], options: ExecOptions = {}): ResolvedExecOptions {
  if (!Array.isArray(command) || command.length === 0 || !command.every((arg) => typeof arg === 'string' && !arg.includes('\0'))) {
    throw new ConfigError(`exec command must be a non-empty array of strings without NUL bytes, got ${JSON.stringify(command)}`);
  }
  const timeoutMs = options.timeoutMs ?? 30_000;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0 || timeoutMs > MAX_TIMEOUT_MS) {
    throw new ConfigError(`ExecOptions.timeoutMs must be in (0, ${MAX_TIMEOUT_MS}], got ${timeoutMs}`);
  }
  const maxOutputBytes = options.maxOutputBytes ?? 64 * 1024;
  wholeNumber('ExecOptions.maxOutputBytes', maxOutputBytes, { min: 2, max: MAX_OUTPUT_BYTES });
  const cwd = options.cwd ?? WORKSPACE;
  if (!cwd.startsWith('/')) throw new ConfigError(`ExecOptions.cwd must be an absolute path, got ${cwd}`);
  const env = options.env ?? {};
  for (const [name, value] of Object.entries(env)) {
    if (name === '' || name.includes('=') || name.includes('\0') || typeof value !== 'string' || value.includes('\0')) {
      throw new ConfigError(`ExecOptions.env has an invalid entry ${JSON.stringify(name)}=${JSON.stringify(value)}`);
    }
  }
  const stdin = options.stdin === undefined ? null : Buffer.isBuffer(options.stdin) ? options.stdin : Buffer.from(options.stdin, 'utf8');
  const preload = options.preload ?? [];
  if (!Array.isArray(preload) || !preload.every((name) => typeof name === 'string' && MODULE_NAME.test(name))) {
    throw new ConfigError(`ExecOptions.preload must be a list of dotted Python module names, got ${JSON.stringify(preload)}`);
  }
  return { timeoutMs, stdin, env, cwd, maxOutputBytes, signal: options.signal ?? null, preload };
}

/** How a command ended. `timeout` and `oom` are never reported as a plain non-zero exit. */
export type ExecStatus = 'exited' | 'timeout' | 'oom';

export interface ExecResult {
  status: ExecStatus;
  /** The exit code, 128 + signal number when a signal ended the command, null on timeout. */
  exitCode: number | null;
  stdout: string;
  stderr: string;
  /** True when either stream exceeded maxOutputBytes; the middle was dropped. */
  truncated: boolean;
  durationMs: number;
}


export interface ReadOptions {
  /** Bytes one call returns in all; a file that would pass it is refused as `too-large`. @default 64 MiB */
  maxBytes?: number;
}

export interface SnapshotOptions {
  /** @default '/workspace' */
  dir?: string;
  /** Largest file whose text is carried; a larger one is listed in `skipped`. @default 1 MiB */
  maxFileBytes?: number;
  /** Bytes of names, link targets and text carried in all; entries past it are listed in `skipped`. @default 64 MiB */
  maxBytes?: number;
  /** Names of folders not entered wherever they are (`__pycache__`, say). @default [] */
  skipDirs?: readonly string[];
}

/** An entry of the tree that a snapshot lists but does not carry, with the reason. */
export interface SkippedEntry {
  readonly path: string;
  /** The path is in escaped form (its bytes are not UTF-8; see escapePathBytes). */
  readonly escaped: boolean;
  readonly reason: string;
}

/**
 * A whole tree as it is, names read as bytes and symlinks never followed: files under FileTree keys (escaped,
 * and listed in extras.escapedPaths, when a name is not UTF-8), symlinks with their targets in extras, and
 * what could not be carried (special files, files over the size cap) in `skipped`.
 */
export interface WorkspaceSnapshot {
  readonly files: FileTree;
  readonly extras: WorkspaceExtras;
  readonly skipped: readonly SkippedEntry[];
}

export interface Sandbox {
  readonly id: string;
  /** Digest of the image the sandbox runs, stamped on records as lineage. */
  readonly imageDigest: string;
  /** Runs a command; everything it starts is killed when it exits, times out or is cancelled. */
  exec(command: readonly string[], options?: ExecOptions): Promise<ExecResult>;
  /**
   * Writes files under `dir` (relative paths only). A bad path, bad content or a full disk is a
   * WorkspaceFileError saying why, and nothing is written when a path or content is refused. @default dir '/workspace'
   */
  writeFiles(files: FileTree, dir?: string): Promise<void>;
  /**
   * Reads UTF-8 text files under `dir`. A bad path, a missing file, a directory, a file too large or not UTF-8 is
   * a WorkspaceFileError naming the file and the reason.
   */
  readFiles(paths: readonly string[], dir?: string, options?: ReadOptions): Promise<FileTree>;
  /** Reads one file under `dir`, as readFiles. */
  readFile(path: string, dir?: string, options?: ReadOptions): Promise<string>;
  /** Lists and reads a whole tree (by default /workspace), whatever its names hold. */
  snapshot(options?: SnapshotOptions): Promise<WorkspaceSnapshot>;
  /**
   * Opens a TCP port on the sandbox's own loopback (127.0.0.1 inside it) whose every connection is carried over
   * the executor's channel to the sandbox agent to a socket `connect` opens on the host: the one way out of a
   * sandbox that has no network, to the one endpoint the caller chose. Carrying ends with the sandbox or `close`.
   */
  forward(connect: () => Duplex): Promise<LoopbackForward>;
  /**
   * Hands the sandbox back. It is never reused: it is destroyed with everything in it, in the background
   * (`SandboxPool.close` waits for that); commands still running get a retriable error.
   */
  release(): Promise<void>;
}

/** A loopback port of a sandbox carried to one host endpoint (Sandbox.forward). */
export interface LoopbackForward {
  /** The port inside the sandbox (on 127.0.0.1). */
  readonly port: number;
  /** Connections carried so far. */
  readonly connections: number;
  /** Ends every carried connection; later ones are closed as they open. */
  close(): void;
}

export interface AcquireOptions {
  image: string;
  /** Lineage labels on the sandbox. */
  runId: string;
  taskId: string;
  /** Override the pool's limits for this sandbox. @default the pool's limits */
  limits?: SandboxLimits;
  /** Gives up waiting for a lease (PoolOptions.maxSandboxes) when aborted. @default none */
  signal?: AbortSignal;
}

export interface SandboxPool {
  acquire(options: AcquireOptions): Promise<Sandbox>;
  /** Releases every sandbox still held, drops the warm ones, and waits until all are destroyed. */
  close(): Promise<void>;
  /**
   * Whether the host's sandbox engine answers now (a Docker ping), asked after a handler failed: a processor
   * whose host is down leaves its group instead of retrying there. @default absent: the host always counts as up
   */
  reachable?(): Promise<boolean>;
}
