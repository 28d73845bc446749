import { SandboxError, type FileTree } from '../../schemas/index.js';
import type { AgentChannel } from './agent-channel.js';
import { resolveExecOptions, WORKSPACE, type ExecOptions, type ExecResult, type Sandbox } from './types.js';

/** What a backend hands the pool: one started sandbox whose agent is ready. */
export interface SandboxHandle {
  readonly id: string;
  readonly imageDigest: string;
  readonly channel: AgentChannel;
  /** Records which task holds the sandbox now (a warm one was started before the task was known). */
  assign(taskId: string): Promise<void>;
  /** `oom` when the out-of-memory killer took the whole sandbox (its agent included), else null. */
  diagnose(): Promise<'oom' | null>;
  /** Kills everything in the sandbox and frees it; an already-gone sandbox is not an error. */
  destroy(): Promise<void>;
}

/** How long past a command's deadline the agent may stay silent before the sandbox is declared broken. */
const AGENT_GRACE_MS = 10_000;
/** Most bytes one readFiles call returns. */
const MAX_READ_BYTES = 64 * 1024 * 1024;

/** The sandbox a caller holds: every call is one request to the agent inside. */
export class AgentSandbox implements Sandbox {
  private released = false;

  constructor(
    private readonly handle: SandboxHandle,
    private readonly onRelease: (handle: SandboxHandle) => void,
  ) {}

  get id(): string {
    return this.handle.id;
  }

  get imageDigest(): string {
    return this.handle.imageDigest;
  }

  async exec(command: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    const resolved = resolveExecOptions(command, options);
    this.assertHeld();
    const { channel } = this.handle;
    const started = performance.now();
    const { id, result } = channel.request<ExecResult>('exec', {
      argv: command,
      env: resolved.env,
      cwd: resolved.cwd,
      timeoutMs: resolved.timeoutMs,
      stdin: resolved.stdin === null ? null : resolved.stdin.toString('base64'),
      maxOutputBytes: resolved.maxOutputBytes,
    });
    const cancel = (): void => void channel.request('cancel', { target: id }).result.catch(() => undefined);
    resolved.signal?.addEventListener('abort', cancel, { once: true });
    if (resolved.signal?.aborted) cancel();
    // The agent enforces the deadline itself; this only catches an agent that stopped answering.
    const guard = setTimeout(
      () => channel.close(`its agent did not answer within ${AGENT_GRACE_MS} ms of a ${resolved.timeoutMs} ms deadline`),
      resolved.timeoutMs + AGENT_GRACE_MS,
    );
    try {
      return await result;
    } catch (error) {
      // The sandbox died under the command: when the out-of-memory killer did it, that is the command's outcome.
      if (channel.closed && (await this.handle.diagnose().catch(() => null)) === 'oom') {
        const stderr = 'the out-of-memory killer ended the whole sandbox';
        return { status: 'oom', exitCode: null, stdout: '', stderr, truncated: false, durationMs: performance.now() - started };
      }
      throw error;
    } finally {
      clearTimeout(guard);
      resolved.signal?.removeEventListener('abort', cancel);
    }
  }

  async writeFiles(files: FileTree, dir: string = WORKSPACE): Promise<void> {
    this.assertHeld();
    await this.handle.channel.request('write', { dir, files }).result;
  }

  async readFiles(paths: readonly string[], dir: string = WORKSPACE): Promise<FileTree> {
    this.assertHeld();
    const { files } = await this.handle.channel.request<{ files: FileTree }>('read', { dir, paths, maxBytes: MAX_READ_BYTES }).result;
    return files;
  }

  async readFile(path: string, dir: string = WORKSPACE): Promise<string> {
    const files = await this.readFiles([path], dir);
    return files[path] ?? '';
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.onRelease(this.handle);
  }

  private assertHeld(): void {
    if (this.released) throw new SandboxError(`sandbox ${this.id} was released; acquire a new one`);
  }
}
