import { SandboxError, errorMessage } from '../../schemas/index.js';

export interface WarmPoolHooks<Spec, Item> {
  /** Starts one item, ready to hand out. */
  create(spec: Spec): Promise<Item>;
  /** Destroys an item; only called once per item. */
  destroy(item: Item): Promise<void>;
  /** False once an item died while it waited (its engine restarted, say). */
  isUsable(item: Item): boolean;
  warn(message: string): void;
}

export interface WarmPoolSettings {
  /** Ready items kept per key. */
  readonly size: number;
  /** A key's ready items are destroyed after this long without a `take` for it. */
  readonly maxIdleMs: number;
}

interface KeyState<Spec, Item> {
  readonly key: string;
  readonly spec: Spec;
  readonly ready: Item[];
  creating: number;
  lastDemand: number;
  failures: number;
  retryTimer: NodeJS.Timeout | null;
}

const MAX_BACKOFF_MS = 10_000;

/**
 * Keeps `size` pre-started items per key so that `take` hands one out at once, and starts a replacement in the
 * background for each one taken. Items are never reused: `retire` destroys them (in the background; `close`
 * waits for every destruction and for creations still in flight).
 */
export class WarmPool<Spec, Item> {
  private readonly keys = new Map<string, KeyState<Spec, Item>>();
  private readonly work = new Set<Promise<void>>();
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly hooks: WarmPoolHooks<Spec, Item>,
    private readonly settings: WarmPoolSettings,
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.max(50, Math.min(settings.maxIdleMs / 2, 30_000)));
    this.sweeper.unref();
  }

  /**
   * A ready item for `key` if one is waiting, else one created from `coldSpec`; either way the key is topped up
   * behind it with items created from `spec` (the spec of the key's first take: what every item of the key shares).
   */
  async take(key: string, spec: Spec, coldSpec: Spec = spec): Promise<Item> {
    if (this.closed) throw new SandboxError('the sandbox pool is closed');
    let state = this.keys.get(key);
    if (!state) {
      state = { key, spec, ready: [], creating: 0, lastDemand: 0, failures: 0, retryTimer: null };
      this.keys.set(key, state);
    }
    state.lastDemand = Date.now();
    // Replacements start on the next turn: starting one blocks the event loop for a moment (a process spawn),
    // and the caller should have its sandbox first.
    const topUp = state;
    setImmediate(() => this.refill(topUp));
    for (let item = state.ready.shift(); item !== undefined; item = state.ready.shift()) {
      if (this.hooks.isUsable(item)) return item;
      this.retire(item);
    }
    const created = this.hooks.create(coldSpec);
    this.track(created.then(
      (item) => {
        if (this.closed) this.retire(item);
      },
      () => undefined,
    ));
    return created;
  }

  /** Destroys an item in the background (also when it is still waiting in the pool). */
  retire(item: Item): void {
    for (const state of this.keys.values()) {
      const index = state.ready.indexOf(item);
      if (index >= 0) state.ready.splice(index, 1);
    }
    this.track(this.hooks.destroy(item).catch((error: unknown) => this.hooks.warn(`destroying a sandbox failed: ${errorMessage(error)}`)));
  }

  get stats(): { ready: number; creating: number; pending: number } {
    let ready = 0;
    let creating = 0;
    for (const state of this.keys.values()) {
      ready += state.ready.length;
      creating += state.creating;
    }
    return { ready, creating, pending: this.work.size };
  }

  /** Destroys every ready item and waits for all creations and destructions in flight. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    for (const state of this.keys.values()) {
      if (state.retryTimer) clearTimeout(state.retryTimer);
      for (const item of state.ready.splice(0)) this.retire(item);
    }
    while (this.work.size > 0) await Promise.allSettled([...this.work]);
    this.keys.clear();
  }

  private idle(state: KeyState<Spec, Item>): boolean {
    return Date.now() - state.lastDemand > this.settings.maxIdleMs;
  }

  private refill(state: KeyState<Spec, Item>): void {
    if (this.closed || state.retryTimer !== null || this.idle(state)) return;
    while (state.ready.length + state.creating < this.settings.size) {
      state.creating++;
      this.track(
        this.hooks.create(state.spec).then(
          (item) => {
            state.creating--;
            state.failures = 0;
            if (this.closed || this.idle(state)) this.retire(item);
            else state.ready.push(item);
          },
          (error: unknown) => {
            state.creating--;
            state.failures++;
            // Back off so that a dead engine is not hammered; `take` still tries a cold start meanwhile.
            const delay = Math.min(MAX_BACKOFF_MS, 250 * 2 ** state.failures);
            this.hooks.warn(`starting a warm sandbox failed (retrying in ${delay} ms): ${errorMessage(error)}`);
            if (state.retryTimer === null && !this.closed) {
              state.retryTimer = setTimeout(() => {
                state.retryTimer = null;
                this.refill(state);
              }, delay);
              state.retryTimer.unref();
            }
          },
        ),
      );
    }
  }

  /** Drops dead items and the ready items of keys nobody asked for within maxIdleMs, then tops the rest up. */
  private sweep(): void {
    for (const state of [...this.keys.values()]) {
      for (const item of state.ready.filter((i) => !this.hooks.isUsable(i))) this.retire(item);
      if (this.idle(state)) {
        for (const item of state.ready.splice(0)) this.retire(item);
        if (state.creating === 0 && state.retryTimer === null) this.keys.delete(state.key);
      } else {
        this.refill(state);
      }
    }
  }

  private track(work: Promise<void>): void {
    this.work.add(work);
    void work.finally(() => this.work.delete(work));
  }
}
