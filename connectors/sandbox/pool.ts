import { availableParallelism } from 'node:os';
import { ConfigError, errorMessage, SandboxError, Semaphore, wholeNumber } from '../../schemas/index.js';
import { AgentSandbox, type SandboxHandle } from './agent-sandbox.js';
import { resolveSandboxLimits, type AcquireOptions, type ResolvedSandboxLimits, type Sandbox, type SandboxLimits, type SandboxPool } from './types.js';
import { WarmPool } from './warm-pool.js';

/** Options every backend's pool takes. */
export interface PoolOptions {
  /** Limits of every sandbox; AcquireOptions.limits override them field by field. @default resolveSandboxLimits() */
  limits?: SandboxLimits;
  /** Pre-started sandboxes kept per (image, run, limits); 0 starts every sandbox on acquire. @default 2 */
  warmSize?: number;
  /** Warm sandboxes of an (image, run, limits) nobody acquired for this long are destroyed. @default 300000 */
  warmMaxIdleMs?: number;
  /** How often sandboxes left by executors that died are removed (once at start-up too); 0: only at start-up. @default 60000 */
  reapIntervalMs?: number;
  /**
   * Sandboxes held at once through this pool, a lease budget for the host that rollouts and verification share
   * (one pool serves both in a process): `acquire` waits for a lease, first come first served, so a worker
   * takes on no more episodes than the host has sandboxes for. Warm sandboxes are not counted.
   * @default 4 per CPU core (8 on 2 cores)
   */
  maxSandboxes?: number;
  /** Receives background problems (a failed refill, removal or sweep). @default a `[sandbox]` line on stderr */
  onWarning?: (message: string) => void;
}

export interface ResolvedPoolOptions {
  readonly limits: ResolvedSandboxLimits;
  readonly warmSize: number;
  readonly warmMaxIdleMs: number;
  readonly reapIntervalMs: number;
  readonly maxSandboxes: number;
  readonly onWarning: (message: string) => void;
}

const MAX_WARM_SIZE = 256;

export function resolvePoolOptions(options: PoolOptions, what: string): ResolvedPoolOptions {
  const warmSize = options.warmSize ?? 2;
  wholeNumber(`${what}.warmSize`, warmSize, { min: 0, max: MAX_WARM_SIZE });
  const warmMaxIdleMs = options.warmMaxIdleMs ?? 300_000;
  if (!Number.isFinite(warmMaxIdleMs) || warmMaxIdleMs < 100) throw new ConfigError(`${what}.warmMaxIdleMs must be at least 100 ms, got ${warmMaxIdleMs}`);
  const reapIntervalMs = options.reapIntervalMs ?? 60_000;
  if (!Number.isFinite(reapIntervalMs) || (reapIntervalMs !== 0 && reapIntervalMs < 1000)) {
    throw new ConfigError(`${what}.reapIntervalMs must be 0 (start-up only) or at least 1000 ms, got ${reapIntervalMs}`);
  }
  const maxSandboxes = options.maxSandboxes ?? 4 * availableParallelism();
  wholeNumber(`${what}.maxSandboxes`, maxSandboxes, { min: 1, max: 100_000 });
  return {
    limits: resolveSandboxLimits(options.limits),
    warmSize,
    warmMaxIdleMs,
    reapIntervalMs,
    maxSandboxes,
    onWarning: options.onWarning ?? ((message) => void process.stderr.write(`[sandbox] ${message}\n`)),
  };
}

/** Everything a backend needs to start one sandbox. */
export interface StartSpec {
  readonly image: string;
  readonly runId: string;
  /** The task of the acquire it is started for; empty for a warm one (its task is assigned on acquire). */
  readonly taskId: string;
  readonly limits: ResolvedSandboxLimits;
}

/** What the reaper removed, and what it left because it could not tell whether the owner is alive. */
export interface ReapReport {
  readonly removed: readonly string[];
  readonly unknownOwner: readonly string[];
}

/** One way to run sandboxes (Docker containers, bubblewrap processes); the pool does warm-keeping and bookkeeping. */
export interface SandboxBackend {
  /** Identifies this pool's sandboxes to reapers. */
  readonly owner: string;
  start(spec: StartSpec): Promise<SandboxHandle>;
  /**
   * Removes sandboxes whose owner process is gone, and this owner's sandboxes that are not in `live` (lost
   * when an engine restarted, say).
   */
  reap(live: ReadonlySet<string>): Promise<ReapReport>;
  /** Ids of this owner's sandboxes that exist on the host right now (for leak checks). */
  existing(): Promise<string[]>;
  /** Removes every sandbox of this owner still on the host and returns their ids (close's last step). */
  removeAll(): Promise<string[]>;
  /** Whether the engine answers at all (SandboxPool.reachable); never throws. */
  reachable(): Promise<boolean>;
}

/**
 * A SandboxPool over any backend: warm sandboxes per (image, run, limits), released sandboxes destroyed in the
 * background and never handed out again, dead sandboxes dropped, and a reaper at start-up and on a timer.
 */
export class AgentSandboxPool implements SandboxPool {
  readonly options: ResolvedPoolOptions;
  private readonly warm: WarmPool<StartSpec, SandboxHandle>;
  /** Every sandbox started and not yet destroyed, held or warm: what the reaper must leave alone. */
  private readonly live = new Map<string, SandboxHandle>();
  /** Sandboxes handed out and not yet released, each with the release of its lease. */
  private readonly held = new Map<SandboxHandle, () => void>();
  private readonly chores = new Set<Promise<void>>();
  private readonly destroyed = new WeakSet<SandboxHandle>();
  private readonly reaper: NodeJS.Timeout | null;
  /** The host's lease budget: one permit per held sandbox. */
  private readonly leases: Semaphore;
  private closed = false;
  private reaped = 0;

  constructor(
    protected readonly backend: SandboxBackend,
    options: ResolvedPoolOptions,
  ) {
    this.options = options;
    this.leases = new Semaphore(options.maxSandboxes);
    this.warm = new WarmPool<StartSpec, SandboxHandle>(
      {
        create: (spec) => this.start(spec),
        destroy: (handle) => this.destroy(handle),
        isUsable: (handle) => !handle.channel.closed,
        warn: options.onWarning,
      },
      { size: options.warmSize, maxIdleMs: options.warmMaxIdleMs },
    );
    this.chore(this.reapNow().then(() => undefined));
    this.reaper = options.reapIntervalMs > 0 ? setInterval(() => this.chore(this.reapNow().then(() => undefined)), options.reapIntervalMs) : null;
    this.reaper?.unref();
  }

  async acquire(options: AcquireOptions): Promise<Sandbox> {
    if (this.closed) throw new SandboxError('the sandbox pool is closed');
    const limits = options.limits ? resolveSandboxLimits({ ...this.options.limits, ...options.limits }) : this.options.limits;
    const key = JSON.stringify([options.image, options.runId, limits]);
    // Warm sandboxes start before their task is known, so they carry none until one acquires them.
    const warm: StartSpec = { image: options.image, runId: options.runId, taskId: '', limits };
    const lease = await this.leases.acquire(options.signal);
    let handle: SandboxHandle;
    try {
      if (this.closed) throw new SandboxError('the sandbox pool is closed');
      handle = await this.warm.take(key, warm, { ...warm, taskId: options.taskId });
    } catch (error) {
      lease();
      throw error;
    }
    if (this.closed) {
      // Closed while it started: close has destroyed it (or will), so it must not be handed out.
      lease();
      this.warm.retire(handle);
      throw new SandboxError('the sandbox pool is closed');
    }
    this.held.set(handle, lease);
    handle.channel.assign(options.taskId);
    this.chore(handle.assign(options.taskId).catch((error: unknown) => this.options.onWarning(`labelling sandbox ${handle.id} with task ${options.taskId} failed: ${errorMessage(error)}`)));
    return new AgentSandbox(handle, (released) => {
      this.held.delete(released);
      lease();
      this.warm.retire(released);
    });
  }

  /** Runs the reaper now (it also runs at start-up and every reapIntervalMs). */
  async reapNow(): Promise<ReapReport> {
    try {
      const report = await this.backend.reap(new Set(this.live.keys()));
      this.reaped += report.removed.length;
      return report;
    } catch (error) {
      this.options.onWarning(`reaping orphaned sandboxes failed: ${errorMessage(error)}`);
      return { removed: [], unknownOwner: [] };
    }
  }

  /** The label that marks this pool's sandboxes for reapers. */
  get owner(): string {
    return this.backend.owner;
  }

  reachable(): Promise<boolean> {
    return this.backend.reachable();
  }

  /** Ids of this pool's sandboxes that exist on the host right now, whatever the pool thinks. */
  existingSandboxes(): Promise<string[]> {
    return this.backend.existing();
  }

  /** Sandboxes held by callers, waiting warm, being created and being destroyed. */
  get stats(): { held: number; live: number; ready: number; creating: number; pending: number; leasesFree: number; waitingForLease: number } {
    return { held: this.held.size, live: this.live.size, ...this.warm.stats, leasesFree: this.leases.available, waitingForLease: this.leases.waiting };
  }

  /** Sandboxes the reaper has removed since the pool started (left by executors that died, or lost by this pool). */
  get reapedCount(): number {
    return this.reaped;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reaper) clearInterval(this.reaper);
    for (const [handle, lease] of this.held) {
      lease();
      this.warm.retire(handle);
    }
    this.held.clear();
    await this.warm.close();
    while (this.chores.size > 0) await Promise.allSettled([...this.chores]);
    // Every creation and removal has settled; whatever of this owner is still on the host was lost by the
    // bookkeeping (a creation whose answer never came, a removal that failed) and goes now.
    try {
      const left = await this.backend.removeAll();
      if (left.length > 0) this.options.onWarning(`removed ${left.length} sandbox(es) the pool had lost track of at close: ${left.join(', ')}`);
    } catch (error) {
      this.options.onWarning(`removing what was left of this pool's sandboxes at close failed: ${errorMessage(error)}`);
    }
  }

  private async start(spec: StartSpec): Promise<SandboxHandle> {
    const handle = await this.backend.start(spec);
    this.live.set(handle.id, handle);
    // A sandbox that dies on its own (engine restart, say) is cleaned up now, not only when it is released.
    handle.channel.onClose(() => this.warm.retire(handle));
    return handle;
  }

  private async destroy(handle: SandboxHandle): Promise<void> {
    if (this.destroyed.has(handle)) return;
    this.destroyed.add(handle);
    try {
      await handle.destroy();
    } finally {
      this.live.delete(handle.id);
    }
  }

  private chore(work: Promise<void>): void {
    this.chores.add(work);
    void work.finally(() => this.chores.delete(work));
  }
}
