import type { FileTree } from '../../schemas/index.js';

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

export function resolveSandboxLimits(limits: SandboxLimits = {}): ResolvedSandboxLimits {
  const resolved = {
    cpus: 1,
    memoryBytes: 512 * 1024 * 1024,
    pids: 128,
    openFiles: 256,
    fileSizeBytes: 32 * 1024 * 1024,
    workspaceBytes: 64 * 1024 * 1024,
    tmpBytes: 64 * 1024 * 1024,
    ...limits,
  };
  for (const [name, value] of Object.entries(resolved)) {
    if (!(typeof value === 'number' && value > 0 && Number.isFinite(value))) throw new Error(`SandboxLimits.${name} must be a positive number, got ${value}`);
  }
  if (resolved.memoryBytes < 16 * 1024 * 1024) throw new Error(`SandboxLimits.memoryBytes must be at least 16 MiB, got ${resolved.memoryBytes}`);
  return resolved;
}

export interface ExecOptions {
  /** Wall-clock budget; the whole process tree is killed at the deadline. @default 30000 */
  timeoutMs?: number;
  stdin?: string | Buffer;
  env?: Readonly<Record<string, string>>;
  /** @default '/workspace' */
  cwd?: string;
  /** Bytes kept per stream (half from the head, half from the tail). @default 64 KiB */
  maxOutputBytes?: number;
  /** Cancels the command; it is killed as on timeout. */
  signal?: AbortSignal;
}

/** How a command ended. `timeout` and `oom` are never reported as a plain non-zero exit. */
export type ExecStatus = 'exited' | 'timeout' | 'oom';

export interface ExecResult {
  status: ExecStatus;
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
  exec(command: readonly string[], options?: ExecOptions): Promise<ExecResult>;
  /** Writes files under `dir` (relative paths only). @default dir '/workspace' */
  writeFiles(files: FileTree, dir?: string): Promise<void>;
  /** Reads files under `dir`; a missing file is an error naming it. */
  readFiles(paths: readonly string[], dir?: string): Promise<FileTree>;
  /** Destroys the sandbox and everything in it; never reused. */
  release(): Promise<void>;
}

export interface AcquireOptions {
  image: string;
  /** Lineage labels on the container. */
  runId: string;
  taskId: string;
  limits?: SandboxLimits;
}

export interface SandboxPool {
  acquire(options: AcquireOptions): Promise<Sandbox>;
  /** Releases every sandbox still held. */
  close(): Promise<void>;
}
