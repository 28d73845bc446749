import { ConfigError, pathFromBytes, SandboxError, wholeNumber, WorkspaceFileError, type FileTree, type WorkspaceSymlink } from '../../schemas/index.js';
import type { Duplex } from 'node:stream';
import type { AgentChannel, AgentEvent } from './agent-channel.js';
import {
  resolveExecOptions,
  WORKSPACE,
  type ExecOptions,
  type ExecResult,
  type LoopbackForward,
  type ReadOptions,
  type Sandbox,
  type SkippedEntry,
  type SnapshotOptions,
  type WorkspaceSnapshot,
} from './types.js';

/** What a backend hands the pool: one started sandbox whose agent is ready. */
export interface SandboxHandle {
  readonly id: string;
  readonly imageDigest: string;
  readonly channel: AgentChannel;
  /**
   * Tags the sandbox on the host with the task that holds it now (a warm one was started before its task was
   * known); the pool has already told the channel, which names the task in every error.
   */
  assign(taskId: string): Promise<void>;
  /** `oom` when the out-of-memory killer took the whole sandbox (its agent included), else null. */
  diagnose(): Promise<'oom' | null>;
  /** Kills everything in the sandbox and frees it; an already-gone sandbox is not an error. */
  destroy(): Promise<void>;
}

/** How long past a command's deadline the agent may stay silent before the sandbox is declared broken. */
const AGENT_GRACE_MS = 10_000;
/** Most bytes one readFiles or snapshot call returns. */
const MAX_READ_BYTES = 64 * 1024 * 1024;
const DEFAULT_SNAPSHOT_FILE_BYTES = 1024 * 1024;
/** Most bytes of paths and content one writeFiles call sends. */
const MAX_WRITE_BYTES = 64 * 1024 * 1024;

/** A snapshot as the agent sends it: names and targets as base64 of their raw bytes. */
interface AgentSnapshot {
  readonly files: ReadonlyArray<{ readonly path: string; readonly text: string }>;
  readonly symlinks: ReadonlyArray<{ readonly path: string; readonly target: string }>;
  readonly skipped: ReadonlyArray<{ readonly path: string; readonly reason: string }>;
}

function byteLimit(value: number | undefined, fallback: number, what: string): number {
  return wholeNumber(what, value ?? fallback, { min: 0, max: MAX_READ_BYTES });
}

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
      ...(resolved.preload.length > 0 ? { preload: resolved.preload } : {}),
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
    // The agent parses the request in the sandbox's memory: a huge one would end in its OOM killer, not an error.
    const bytes = Object.entries(files).reduce((sum, [path, content]) => sum + Buffer.byteLength(path) + (typeof content === 'string' ? Buffer.byteLength(content) : 0), 0);
    if (bytes > MAX_WRITE_BYTES) throw new WorkspaceFileError(`the files to write are ${bytes} bytes, over the ${MAX_WRITE_BYTES} bytes one write may take`, 'too-large');
    this.assertHeld();
    await this.handle.channel.request('write', { dir, files }).result;
  }

  async readFiles(paths: readonly string[], dir: string = WORKSPACE, options: ReadOptions = {}): Promise<FileTree> {
    const maxBytes = byteLimit(options.maxBytes, MAX_READ_BYTES, 'ReadOptions.maxBytes');
    this.assertHeld();
    const { files } = await this.handle.channel.request<{ files: FileTree }>('read', { dir, paths, maxBytes }).result;
    return files;
  }

  async readFile(path: string, dir: string = WORKSPACE, options: ReadOptions = {}): Promise<string> {
    const files = await this.readFiles([path], dir, options);
    return Object.hasOwn(files, path) ? files[path]! : '';
  }

  async snapshot(options: SnapshotOptions = {}): Promise<WorkspaceSnapshot> {
    const maxFileBytes = byteLimit(options.maxFileBytes, DEFAULT_SNAPSHOT_FILE_BYTES, 'SnapshotOptions.maxFileBytes');
    const maxBytes = byteLimit(options.maxBytes, MAX_READ_BYTES, 'SnapshotOptions.maxBytes');
    const dir = options.dir ?? WORKSPACE;
    if (!dir.startsWith('/')) throw new ConfigError(`SnapshotOptions.dir must be an absolute path, got ${dir}`);
    this.assertHeld();
    const raw = await this.handle.channel.request<AgentSnapshot>('snapshot', { dir, maxFileBytes, maxBytes, skipDirs: options.skipDirs ?? [] }).result;
    return fromAgentSnapshot(raw);
  }

  async forward(connect: () => Duplex): Promise<LoopbackForward> {
    this.assertHeld();
    const { channel } = this.handle;
    const { listener, port } = await channel.request<{ listener: number; port: number }>('listen', {}).result;
    const sockets = new Map<number, Duplex>();
    let connections = 0;
    let closed = false;
    // Requests whose answers nobody waits for: a connection that is gone is the agent's to ignore.
    const tell = (op: 'conn-send' | 'conn-close', conn: number, data?: Buffer): void =>
      void channel.request(op, { conn, ...(data ? { data: data.toString('base64') } : {}) }).result.catch(() => undefined);
    const stop = channel.onEvent((event: AgentEvent) => {
      if (event.event === 'conn-open') {
        if (event.listener !== listener) return;
        if (closed) return tell('conn-close', event.conn);
        connections++;
        const socket = connect();
        sockets.set(event.conn, socket);
        socket.on('data', (data: Buffer) => tell('conn-send', event.conn, data));
        socket.on('end', () => tell('conn-close', event.conn));
        socket.on('error', () => undefined);
        socket.on('close', () => {
          if (sockets.delete(event.conn)) tell('conn-close', event.conn);
        });
        return;
      }
      const socket = sockets.get(event.conn);
      if (!socket) return;
      if (event.event === 'conn-data') socket.write(Buffer.from(event.data ?? '', 'base64'));
      else socket.end();
    });
    const close = (): void => {
      closed = true;
      stop();
      for (const [conn, socket] of sockets) {
        sockets.delete(conn);
        socket.destroy();
        tell('conn-close', conn);
      }
    };
    channel.onClose(close);
    return {
      port,
      get connections() {
        return connections;
      },
      close,
    };
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.onRelease(this.handle);
  }

  private assertHeld(): void {
    if (this.released) throw new SandboxError(`sandbox ${this.handle.channel.label} was released; acquire a new one`);
  }
}

/** FileTree keys and WorkspaceExtras from the agent's raw names: UTF-8 names as they are, others escaped and flagged. */
function fromAgentSnapshot(raw: AgentSnapshot): WorkspaceSnapshot {
  const name = (base64: string) => pathFromBytes(Buffer.from(base64, 'base64'));
  const skipped: SkippedEntry[] = raw.skipped.map((entry) => ({ ...name(entry.path), reason: entry.reason }));
  const entries = [...raw.files.map((file) => ({ ...name(file.path), file })), ...raw.symlinks.map((link) => ({ ...name(link.path), link }))];
  // Escaping is reversible, but an escaped name can spell a real UTF-8 name ('a%FF'): the real one keeps the key.
  const plain = new Set(entries.filter((entry) => !entry.escaped).map((entry) => entry.path));
  // Entries, not assignment: a file may be called '__proto__'.
  const files: Array<[string, string]> = [];
  const escapedPaths: string[] = [];
  const symlinks: WorkspaceSymlink[] = [];
  for (const entry of entries) {
    const { path, escaped } = entry;
    if (escaped && plain.has(path)) {
      skipped.push({ path, escaped, reason: 'its escaped name is the name of another entry' });
    } else if ('file' in entry) {
      files.push([path, entry.file.text]);
      if (escaped) escapedPaths.push(path);
    } else {
      const target = name(entry.link.target);
      symlinks.push({ path, target: target.path, pathEscaped: escaped, targetEscaped: target.escaped });
    }
  }
  return { files: Object.fromEntries(files), extras: { escapedPaths, symlinks }, skipped };
}
