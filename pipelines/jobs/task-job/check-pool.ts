import { Worker } from 'node:worker_threads';
import type { CheckedRow, MappedItem, RowCheckSettings } from './row-check.js';

export interface CheckRequest {
  readonly batch: number;
  readonly items: readonly MappedItem[];
}

export interface CheckReply {
  readonly batch: number;
  readonly rows: readonly CheckedRow[];
}

/**
 * Worker threads that check rows (RowChecker) while the job's own thread reads, maps and admits them:
 * zod, normalisation, the fingerprint and the MinHash signature are most of the validate stage, and need
 * no other row. Each batch goes to the worker with the fewest unanswered; each answer comes back to its own promise.
 */
export class RowCheckPool {
  private readonly workers: Worker[] = [];
  /** Batches sent to each worker and not answered yet. */
  private readonly load: number[] = [];
  private readonly pending = new Map<number, { resolve: (rows: readonly CheckedRow[]) => void; reject: (error: Error) => void }>();
  private sent = 0;
  private failure: Error | null = null;
  private closing = false;

  constructor(settings: RowCheckSettings, threads: number) {
    for (let index = 0; index < threads; index++) {
      const worker = new Worker(new URL('./check-worker.js', import.meta.url), { workerData: settings });
      worker.on('message', ({ batch, rows }: CheckReply) => {
        this.load[index]!--;
        this.pending.get(batch)?.resolve(rows);
        this.pending.delete(batch);
      });
      worker.on('error', (error) => this.fail(new Error(`a row-check worker failed: ${error.message}`, { cause: error })));
      worker.on('exit', (code) => {
        if (!this.closing) this.fail(new Error(`a row-check worker exited (code ${code}) with batches unanswered`));
      });
      this.workers.push(worker);
      this.load.push(0);
    }
  }

  /** The rows of `items` checked, in order. */
  check(items: readonly MappedItem[]): Promise<readonly CheckedRow[]> {
    if (this.failure) return Promise.reject(this.failure);
    const batch = this.sent++;
    const request: CheckRequest = { batch, items };
    const answer = new Promise<readonly CheckedRow[]>((resolve, reject) => this.pending.set(batch, { resolve, reject }));
    // The least busy worker: batches differ in cost, and a worker that shares its core is slower.
    const worker = this.load.indexOf(Math.min(...this.load));
    this.load[worker]!++;
    this.workers[worker]!.postMessage(request);
    return answer;
  }

  /** Stops the workers; batches not answered yet fail. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(this.workers.map((worker) => worker.terminate()));
    this.fail(new Error('the row-check pool was closed with batches unanswered'));
  }

  private fail(error: Error): void {
    this.failure ??= error;
    for (const { reject } of this.pending.values()) reject(error);
    this.pending.clear();
  }
}
