import type { Middleware, Payload, RawRecord } from '../types.js';
import { defaultRegistry, type Labels, type MetricsRegistry } from './registry.js';

/** Seconds: a verification takes seconds, a rollout up to minutes, a reward a millisecond. */
export const LATENCY_BUCKETS_SECONDS = [0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300] as const;

/** The `trialrun_processor_*` families, one set per registry. */
function processorFamilies(registry: MetricsRegistry) {
  const labels = ['processor', 'instance'];
  return {
    recordsIn: registry.counter('trialrun_processor_records_in_total', 'Input records taken off the topics: handled, dead-lettered or skipped.', labels),
    skipped: registry.counter('trialrun_processor_records_skipped_total', 'Input records committed past unhandled (not for this processor, e.g. another run\'s).', labels),
    recordsOut: registry.counter('trialrun_processor_records_out_total', 'Records written by the handlers, dead letters included.', labels),
    errors: registry.counter('trialrun_processor_errors_total', 'Records whose handling threw out of the processor (shutdown, a failed dead-letter write): they are redone after a restart.', labels),
    deadLetters: registry.counter('trialrun_processor_dead_letters_total', 'Input records written to the dead-letter topic instead of their outputs.', labels),
    retries: registry.counter('trialrun_processor_retries_total', 'Tries of a record after its first (retriable failures).', labels),
    inFlight: registry.gauge('trialrun_processor_in_flight', 'Records being handled right now.', labels),
    latency: registry.histogram('trialrun_processor_latency_seconds', 'Time to handle one record, retries included.', labels, LATENCY_BUCKETS_SECONDS),
  };
}

/** Labels of one processor instance in the registry. */
export interface ProcessorLabels {
  readonly processor: string;
  readonly instance: string;
}

/**
 * Counters and latencies of one processor, read by progress displays and the demo summary. Given labels,
 * it also reports into a registry's `trialrun_processor_*` families (for `/metrics` and the dashboard).
 */
export class ProcessorMetrics {
  /** Input records taken off the topics: handled, dead-lettered or skipped. */
  processed = 0;
  /** Input records committed past unhandled because the processor is not for them (ProcessorOptions.accept). */
  private skippedCount = 0;
  failed = 0;
  /** Records written, a dead letter included. */
  outputs = 0;
  /** Input records that went to the dead-letter topic instead of producing their outputs. */
  private deadLetteredCount = 0;
  /** Tries of a record after its first. */
  retries = 0;
  /** Records being handled right now. */
  inFlight = 0;
  /** Time spent handling records, retries included, summed over records handled at once (a processor's busy time). */
  busyMs = 0;
  /** Records in committed transactions, per output topic name (outputs of an aborted transaction are not here). */
  readonly committed = new Map<string, number>();
  private readonly latenciesMs: number[] = [];
  private readonly startedAt = Date.now();
  private readonly families: ReturnType<typeof processorFamilies> | null;
  private readonly labels: Labels;

  /** @param labels where it reports in the registry; without them it only counts for its owner. */
  constructor(labels?: ProcessorLabels, registry: MetricsRegistry = defaultRegistry) {
    this.labels = labels ? { processor: labels.processor, instance: labels.instance } : {};
    this.families = labels ? processorFamilies(registry) : null;
  }

  get skipped(): number {
    return this.skippedCount;
  }

  set skipped(value: number) {
    this.families?.skipped.inc(this.labels, value - this.skippedCount);
    this.skippedCount = value;
  }

  get deadLettered(): number {
    return this.deadLetteredCount;
  }

  set deadLettered(value: number) {
    this.families?.deadLetters.inc(this.labels, value - this.deadLetteredCount);
    this.deadLetteredCount = value;
  }

  /** Input records the processor was for: handled or dead-lettered. */
  get handled(): number {
    return this.processed - this.skipped;
  }

  started(): void {
    this.inFlight++;
    this.families?.inFlight.inc(this.labels);
  }

  record(latencyMs: number, outputs: number): void {
    this.processed++;
    this.outputs += outputs;
    this.finished(latencyMs);
    this.families?.recordsIn.inc(this.labels);
    this.families?.recordsOut.inc(this.labels, outputs);
    // A bounded window keeps memory flat on long runs; percentiles of the recent past are what matter.
    if (this.latenciesMs.length >= 10_000) this.latenciesMs.shift();
    this.latenciesMs.push(latencyMs);
  }

  fail(latencyMs: number): void {
    this.failed++;
    this.finished(latencyMs);
    this.families?.errors.inc(this.labels);
  }

  retried(): void {
    this.retries++;
    this.families?.retries.inc(this.labels);
  }

  percentile(p: number): number {
    if (this.latenciesMs.length === 0) return 0;
    const sorted = [...this.latenciesMs].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
  }

  ratePerSecond(): number {
    return this.processed / Math.max(0.001, (Date.now() - this.startedAt) / 1000);
  }

  private finished(latencyMs: number): void {
    this.busyMs += latencyMs;
    this.inFlight--;
    this.families?.inFlight.dec(this.labels);
    this.families?.latency.observe(this.labels, latencyMs / 1000);
  }
}

/** Outermost: counts every record, its outcome, its latency, and how many are in flight. */
export function metrics(into: ProcessorMetrics): Middleware {
  return (next) => async (payload) => {
    const started = performance.now();
    into.started();
    try {
      const outputs = await next(payload);
      into.record(performance.now() - started, outputs.length);
      return outputs;
    } catch (error) {
      into.fail(performance.now() - started);
      throw error;
    }
  };
}

/** Inside the retry middleware: every call for a payload it has already seen is a retry. */
export function countRetries(into: ProcessorMetrics): Middleware {
  const seen = new WeakSet<Payload<RawRecord>>();
  return (next) => (payload) => {
    if (seen.has(payload)) into.retried();
    else seen.add(payload);
    return next(payload);
  };
}
