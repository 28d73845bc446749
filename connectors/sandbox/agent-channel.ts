import type { Readable, Writable } from 'node:stream';
import { SandboxError, WorkspaceFileError, errorMessage, type WorkspaceRefusal } from '../../schemas/index.js';

/** The protocol version spoken by sandbox-images/python-repair/agent/agent.py (its docstring describes it). */
export const AGENT_PROTOCOL = 4;

/** An answer line longer than this is not something our agent writes: the channel is treated as broken. */
const MAX_LINE_BYTES = 256 * 1024 * 1024;

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

interface AgentMessage {
  event?: string;
  protocol?: number;
  id?: number | null;
  ok?: boolean;
  result?: unknown;
  error?: string;
  /** Set when the agent turned a file request down for what it asked (see WorkspaceFileError). */
  refused?: string;
}

/** What the agent tells unasked: a forwarded connection opened, carried bytes, or ended (agent.py's `listen`). */
export interface AgentEvent {
  readonly event: 'conn-open' | 'conn-data' | 'conn-end';
  readonly conn: number;
  readonly listener?: number;
  /** base64 of the bytes, on conn-data. */
  readonly data?: string;
}
const AGENT_EVENTS: ReadonlySet<string> = new Set(['conn-open', 'conn-data', 'conn-end']);

const REFUSALS: ReadonlySet<string> = new Set<WorkspaceRefusal>(['bad-path', 'bad-content', 'missing', 'directory', 'not-a-file', 'too-large', 'not-utf8', 'no-space', 'denied', 'io']);

/**
 * The executor's end of one sandbox agent: JSON lines to its stdin, JSON lines back from its stdout, requests
 * matched to answers by id so that several commands can run in one sandbox at once.
 */
export class AgentChannel {
  /** Resolves once the agent has said it is ready; rejects if the channel closes first. */
  readonly ready: Promise<void>;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private partial: Buffer[] = [];
  private partialBytes = 0;
  private closedBy: SandboxError | null = null;
  private readonly closeListeners: Array<(error: SandboxError) => void> = [];
  private markReady!: () => void;
  private failReady!: (error: Error) => void;
  private holder: string | null = null;
  private readonly eventListeners = new Set<(event: AgentEvent) => void>();

  constructor(
    private readonly input: Writable,
    output: Readable,
    /** Names the sandbox in errors. */
    private readonly name: string,
  ) {
    this.ready = new Promise<void>((resolve, reject) => {
      this.markReady = resolve;
      this.failReady = reject;
    });
    // Nobody may be waiting for `ready` when the channel breaks (a warm sandbox); that must not be unhandled.
    this.ready.catch(() => undefined);
    output.on('data', (chunk: Buffer) => this.onData(chunk));
    output.on('end', () => this.close('its agent closed the connection'));
    output.on('close', () => this.close('its agent connection was closed'));
    output.on('error', (error: Error) => this.close(`its agent connection failed: ${error.message}`));
    input.on('error', (error: Error) => this.close(`writing to its agent failed: ${error.message}`));
  }

  /** How errors name the sandbox: its name and the task that holds it now. */
  get label(): string {
    return this.holder === null ? this.name : `${this.name} (task ${this.holder})`;
  }

  /** Records the task that holds the sandbox now, for every later error (a warm one had none when it started). */
  assign(taskId: string): void {
    this.holder = taskId;
  }

  get closed(): boolean {
    return this.closedBy !== null;
  }

  /** Called once, with the reason, when the channel closes (at once if it already has). */
  onClose(listener: (error: SandboxError) => void): void {
    if (this.closedBy) listener(this.closedBy);
    else this.closeListeners.push(listener);
  }

  /** Hears every event the agent sends unasked; returns the call that stops hearing them. */
  onEvent(listener: (event: AgentEvent) => void): () => void {
    this.eventListeners.add(listener);
    return () => this.eventListeners.delete(listener);
  }

  /** Sends one request; `id` names it for a later `cancel`. */
  request<T>(op: string, body: Record<string, unknown>): { id: number; result: Promise<T> } {
    const id = this.nextId++;
    const result = new Promise<T>((resolve, reject) => {
      if (this.closedBy) return reject(this.closedBy);
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.input.write(`${JSON.stringify({ ...body, id, op })}\n`);
    });
    return { id, result };
  }

  /** Fails every pending request with a retriable error: the sandbox is gone, not the command at fault. */
  close(reason: string): void {
    if (this.closedBy) return;
    this.closedBy = new SandboxError(`sandbox ${this.label} is gone: ${reason}`, { retriable: true });
    this.failReady(this.closedBy);
    for (const pending of this.pending.values()) pending.reject(this.closedBy);
    this.pending.clear();
    this.partial = [];
    for (const listener of this.closeListeners.splice(0)) listener(this.closedBy);
    if (!this.input.destroyed) this.input.destroy();
  }

  private onData(chunk: Buffer): void {
    for (let newline = chunk.indexOf(10); newline >= 0; newline = chunk.indexOf(10)) {
      const line = Buffer.concat([...this.partial, chunk.subarray(0, newline)]);
      this.partial = [];
      this.partialBytes = 0;
      chunk = chunk.subarray(newline + 1);
      if (line.length > 0) this.onLine(line);
      if (this.closedBy) return;
    }
    if (chunk.length === 0) return;
    this.partial.push(chunk);
    this.partialBytes += chunk.length;
    if (this.partialBytes > MAX_LINE_BYTES) this.close(`its agent sent a line over ${MAX_LINE_BYTES} bytes`);
  }

  private onLine(line: Buffer): void {
    let message: AgentMessage;
    try {
      message = JSON.parse(line.toString('utf8')) as AgentMessage;
    } catch (error) {
      this.close(`its agent wrote something that is not JSON (${errorMessage(error)}): ${line.subarray(0, 200).toString('utf8')}`);
      return;
    }
    if (message.event === 'ready') {
      if (message.protocol !== AGENT_PROTOCOL) {
        this.close(`its agent speaks protocol ${String(message.protocol)}, this executor ${AGENT_PROTOCOL} (rebuild the image: trialrun stack up)`);
        return;
      }
      this.markReady();
      return;
    }
    if (typeof message.event === 'string' && AGENT_EVENTS.has(message.event) && typeof (message as { conn?: unknown }).conn === 'number') {
      for (const listener of this.eventListeners) listener(message as unknown as AgentEvent);
      return;
    }
    const pending = typeof message.id === 'number' ? this.pending.get(message.id) : undefined;
    if (!pending) {
      this.close(`its agent answered a request it was never sent: ${line.subarray(0, 200).toString('utf8')}`);
      return;
    }
    this.pending.delete(message.id as number);
    if (message.ok) pending.resolve(message.result);
    else if (message.refused !== undefined && REFUSALS.has(message.refused)) pending.reject(new WorkspaceFileError(message.error ?? message.refused, message.refused as WorkspaceRefusal));
    else pending.reject(new SandboxError(`sandbox ${this.label}: ${message.error ?? 'the agent gave no reason'}`));
  }
}
