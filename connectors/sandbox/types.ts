import { ConfigError, type FileTree } from '../../schemas/index.js';

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
};

/** Smallest accepted value per limit: below these the agent and a python3 cannot even start. */
const LIMIT_MINIMUMS: ResolvedSandboxLimits = {
  cpus: 0.01,
  memoryBytes: 16 * 1024 * 1024,
  pids: 8,
  openFiles: 16,
  fileSizeBytes: 1024 * 1024,
  workspaceBytes: 1024 * 1024,
  tmpBytes: 1024 * 1024,
};

export function resolveSandboxLimits(limits: SandboxLimits = {}): ResolvedSandboxLimits {
  const resolved: Record<string, number> = { ...DEFAULT_LIMITS };
  for (const [name, value] of Object.entries(limits)) {
    if (!(name in DEFAULT_LIMITS)) throw new ConfigError(`SandboxLimits has no field ${name} (known: ${Object.keys(DEFAULT_LIMITS).join(', ')})`);
    if (value !== undefined) resolved[name] = value;
  }
  for (const [name, value] of Object.entries(resolved)) {
    const minimum = LIMIT_MINIMUMS[name as keyof SandboxLimits];
    const whole = name !== 'cpus';
    if (typeof value !== 'number' || !Number.isFinite(value) || value < minimum || (whole && !Number.isInteger(value))) {
      throw new ConfigError(`SandboxLimits.${name} must be ${whole ? 'a whole number' : 'a number'} >= ${minimum}, got ${value}`);
    }
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
}

export interface ResolvedExecOptions {
  readonly timeoutMs: number;
  readonly stdin: Buffer | null;
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly maxOutputBytes: number;
  readonly signal: AbortSignal | null;
}

const MAX_TIMEOUT_MS = 24 * 3600_000;
const MAX_OUTPUT_BYTES = 64 * 1024 * 1024;

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
  if (!Number.isInteger(maxOutputBytes) || maxOutputBytes < 2 || maxOutputBytes > MAX_OUTPUT_BYTES) {
    throw new ConfigError(`ExecOptions.maxOutputBytes must be a whole number in [2, ${MAX_OUTPUT_BYTES}], got ${maxOutputBytes}`);
  }
  const cwd = options.cwd ?? WORKSPACE;
  if (!cwd.startsWith('/')) throw new ConfigError(`ExecOptions.cwd must be an absolute path, got ${cwd}`);
  const env = options.env ?? {};
  for (const [name, value] of Object.entries(env)) {
    if (name === '' || name.includes('=') || name.includes('\0') || typeof value !== 'string' || value.includes('\0')) {
      throw new ConfigError(`ExecOptions.env has an invalid entry ${JSON.stringify(name)}=${JSON.stringify(value)}`);
    }
  }
  const stdin = options.stdin === undefined ? null : Buffer.isBuffer(options.stdin) ? options.stdin : Buffer.from(options.stdin, 'utf8');
  return { timeoutMs, stdin, env, cwd, maxOutputBytes, signal: options.signal ?? null };
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


export interface Sandbox {
  readonly id: string;
  /** Digest of the image the sandbox runs, stamped on records as lineage. */
  readonly imageDigest: string;
  /** Runs a command; everything it starts is killed when it exits, times out or is cancelled. */
  exec(command: readonly string[], options?: ExecOptions): Promise<ExecResult>;
  /** Writes files under `dir` (relative paths only). @default dir '/workspace' */
  writeFiles(files: FileTree, dir?: string): Promise<void>;
  /** Reads files under `dir`; a missing file is an error naming it. */
  readFiles(paths: readonly string[], dir?: string): Promise<FileTree>;
  /** Reads one file under `dir`. */
  readFile(path: string, dir?: string): Promise<string>;
  /**
   * Hands the sandbox back. It is never reused: it is destroyed with everything in it, in the background
   * (`SandboxPool.close` waits for that); commands still running get a retriable error.
   */
  release(): Promise<void>;
}

export interface AcquireOptions {
  image: string;
  /** Lineage labels on the sandbox. */
  runId: string;
  taskId: string;
  /** Override the pool's limits for this sandbox. @default the pool's limits */
  limits?: SandboxLimits;
}

export interface SandboxPool {
  acquire(options: AcquireOptions): Promise<Sandbox>;
  /** Releases every sandbox still held, drops the warm ones, and waits until all are destroyed. */
  close(): Promise<void>;
}
