import type { Middleware } from './types.js';

/** Counters and latencies of one processor, read by progress displays and the demo summary. */
export class ProcessorMetrics {
  /** Input records taken off the topics: handled, dead-lettered or skipped. */
  processed = 0;
  /** Input records committed past unhandled because the processor is not for them (ProcessorOptions.accept). */
  skipped = 0;
  failed = 0;
  /** Records written, a dead letter included. */
  outputs = 0;
  /** Input records that went to the dead-letter topic instead of producing their outputs. */
  deadLettered = 0;
  /** Records in committed transactions, per output topic name (outputs of an aborted transaction are not here). */
  readonly committed = new Map<string, number>();
  private readonly latenciesMs: number[] = [];
  private readonly startedAt = Date.now();

  /** Input records the processor was for: handled or dead-lettered. */
  get handled(): number {
    return this.processed - this.skipped;
  }

  record(latencyMs: number, outputs: number): void {
    this.processed++;
    this.outputs += outputs;
    // A bounded window keeps memory flat on long runs; percentiles of the recent past are what matter.
    if (this.latenciesMs.length >= 10_000) this.latenciesMs.shift();
    this.latenciesMs.push(latencyMs);
  }

  percentile(p: number): number {
    if (this.latenciesMs.length === 0) return 0;
    const sorted = [...this.latenciesMs].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
  }

  ratePerSecond(): number {
    return this.processed / Math.max(0.001, (Date.now() - this.startedAt) / 1000);
  }
}

export function metrics(into: ProcessorMetrics): Middleware {
  return (next) => async (payload) => {
    const started = performance.now();
    try {
      const outputs = await next(payload);
      into.record(performance.now() - started, outputs.length);
      return outputs;
    } catch (error) {
      into.failed++;
      throw error;
    }
  };
}
