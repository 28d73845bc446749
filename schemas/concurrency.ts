import { setMaxListeners } from 'node:events';
import { ShutdownError } from './errors.js';

/**
 * The one concurrency limit: a counting semaphore, first come first served. Holders get a release function
 * (safe to call twice); waiters can give up through an AbortSignal. The sandbox pool's per-host lease budget,
 * the Docker engine's request limit and `mapLimit` are all this.
 */
export class Semaphore {
  private used = 0;
  private readonly waiters: Array<{ grant: () => void; reject: (error: Error) => void }> = [];

  constructor(readonly limit: number) {
    if (!(limit >= 1)) throw new Error(`Semaphore limit must be at least 1, got ${limit}`);
  }

  /** Free permits now. */
  get available(): number {
    return Math.max(0, this.limit - this.used);
  }

  /** Callers waiting for a permit. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** Resolves with a release function once a permit is free; rejects with a ShutdownError if `signal` aborts first. */
  async acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) throw new ShutdownError();
    if (this.used < this.limit && this.waiters.length === 0) {
      this.used++;
      return this.releaser();
    }
    await new Promise<void>((resolve, reject) => {
      const waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        reject,
      };
      const onAbort = (): void => {
        const index = this.waiters.indexOf(waiter);
        if (index >= 0) this.waiters.splice(index, 1);
        reject(new ShutdownError());
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
    return this.releaser();
  }

  /** Runs `task` holding one permit. */
  async run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const release = await this.acquire(signal);
    try {
      return await task();
    } finally {
      release();
    }
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      // The permit passes straight to the next waiter, so a newcomer cannot overtake it.
      if (next) next.grant();
      else this.used--;
    };
  }
}

/**
 * `fn` over `items` with at most `limit` calls in flight; results in the items' order. The first failure rejects the
 * whole, and from then on no call starts (those in flight run to their end): a lane pool that stops taking work.
 */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const gate = new Semaphore(limit);
  const failed = new AbortController();
  // Every item still queued waits on this one signal, one listener each: a 100-file tree is 100, not a leak.
  setMaxListeners(Math.max(10, items.length), failed.signal);
  let first: unknown;
  try {
    return await Promise.all(
      items.map((item, index) =>
        gate.run(async () => {
          if (failed.signal.aborted) throw new ShutdownError();
          try {
            return await fn(item, index);
          } catch (error) {
            // Before the permit is released: the waiter it passes to must see the failure.
            if (!failed.signal.aborted) {
              first = error;
              failed.abort();
            }
            throw error;
          }
        }, failed.signal),
      ),
    );
  } catch {
    // The calls skipped after it reject too (ShutdownError); the failure is the one that stopped them.
    throw first;
  }
}
