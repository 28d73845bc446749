import type { Middleware, Payload, RawRecord } from './types.js';

/**
 * A small metrics registry with Prometheus text exposition (format 0.0.4): counters, gauges and
 * histograms, each a family of series told apart by labels. Families are created once per registry by
 * name (asking again with the same shape returns the same family), so every processor of a process
 * reports into the same `trialrun_processor_*` families under its own `processor` / `instance` labels.
 */
export type Labels = Readonly<Record<string, string>>;

type MetricType = 'counter' | 'gauge' | 'histogram';

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

const escapeHelp = (text: string): string => text.replaceAll('\\', '\\\\').replaceAll('\n', '\\n');
const escapeLabelValue = (text: string): string => text.replaceAll('\\', '\\\\').replaceAll('\n', '\\n').replaceAll('"', '\\"');

/** A sample value as the format writes it: `+Inf`, `-Inf`, `NaN` or a plain number. */
function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

export abstract class Family<S> {
  protected readonly series = new Map<string, { labels: Labels; state: S }>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: MetricType,
    readonly labelNames: readonly string[],
  ) {}

  /** The series of `labels`, created on first use; the label names must be exactly the family's. */
  protected seriesOf(labels: Labels): S {
    const names = Object.keys(labels);
    if (names.length !== this.labelNames.length || !this.labelNames.every((name) => Object.hasOwn(labels, name))) {
      throw new Error(`metric ${this.name} takes labels {${this.labelNames.join(', ')}}, got {${names.join(', ')}}`);
    }
    const key = JSON.stringify(this.labelNames.map((name) => labels[name]));
    let entry = this.series.get(key);
    if (!entry) {
      entry = { labels: Object.fromEntries(this.labelNames.map((name) => [name, labels[name]!])), state: this.initial() };
      this.series.set(key, entry);
    }
    return entry.state;
  }

  protected abstract initial(): S;
  protected abstract samples(labels: Labels, state: S): string[];

  /** Every series' labels and a copy of its state, for in-process readers such as the dashboard. */
  read(): Array<{ labels: Labels; state: S }> {
    return [...this.series.values()].map(({ labels, state }) => ({ labels, state: structuredClone(state) }));
  }

  /** The family's lines of the exposition. */
  expose(): string[] {
    const lines = [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`];
    for (const { labels, state } of this.series.values()) lines.push(...this.samples(labels, state));
    return lines;
  }

  protected sample(name: string, labels: Labels, value: number): string {
    const pairs = Object.entries(labels).map(([label, text]) => `${label}="${escapeLabelValue(text)}"`);
    return `${name}${pairs.length ? `{${pairs.join(',')}}` : ''} ${formatValue(value)}`;
  }
}

export class Counter extends Family<{ value: number }> {
  inc(labels: Labels, by = 1): void {
    if (!(by >= 0)) throw new Error(`counter ${this.name} can only go up, got ${by}`);
    this.seriesOf(labels).value += by;
  }

  get(labels: Labels): number {
    return this.seriesOf(labels).value;
  }

  protected initial(): { value: number } {
    return { value: 0 };
  }

  protected samples(labels: Labels, state: { value: number }): string[] {
    return [this.sample(this.name, labels, state.value)];
  }
}

export class Gauge extends Family<{ value: number }> {
  set(labels: Labels, value: number): void {
    this.seriesOf(labels).value = value;
  }

  inc(labels: Labels, by = 1): void {
    this.seriesOf(labels).value += by;
  }

  dec(labels: Labels, by = 1): void {
    this.seriesOf(labels).value -= by;
  }

  get(labels: Labels): number {
    return this.seriesOf(labels).value;
  }

  protected initial(): { value: number } {
    return { value: 0 };
  }

  protected samples(labels: Labels, state: { value: number }): string[] {
    return [this.sample(this.name, labels, state.value)];
  }
}

export interface HistogramState {
  readonly counts: number[];
  sum: number;
  count: number;
}

export class Histogram extends Family<HistogramState> {
  constructor(name: string, help: string, labelNames: readonly string[], readonly buckets: readonly number[]) {
    super(name, help, 'histogram', labelNames);
    if (labelNames.includes('le')) throw new Error(`histogram ${name}: the label name "le" is reserved for buckets`);
    if (buckets.length === 0 || buckets.some((bound, i) => !Number.isFinite(bound) || (i > 0 && bound <= buckets[i - 1]!))) {
      throw new Error(`histogram ${name}: buckets must be finite and strictly increasing, got [${buckets.join(', ')}]`);
    }
  }

  observe(labels: Labels, value: number): void {
    const state = this.seriesOf(labels);
    const index = this.buckets.findIndex((bound) => value <= bound);
    if (index >= 0) state.counts[index]!++;
    state.sum += value;
    state.count++;
  }

  protected initial(): HistogramState {
    return { counts: this.buckets.map(() => 0), sum: 0, count: 0 };
  }

  protected samples(labels: Labels, state: HistogramState): string[] {
    let cumulative = 0;
    const lines = this.buckets.map((bound, i) => {
      cumulative += state.counts[i]!;
      return this.sample(`${this.name}_bucket`, { ...labels, le: formatValue(bound) }, cumulative);
    });
    lines.push(this.sample(`${this.name}_bucket`, { ...labels, le: '+Inf' }, state.count));
    lines.push(this.sample(`${this.name}_sum`, labels, state.sum), this.sample(`${this.name}_count`, labels, state.count));
    return lines;
  }
}

/** Reads values at scrape time (e.g. a sandbox pool's sizes) into the gauges it is given. */
export type Collector = () => void;

export class MetricsRegistry {
  private readonly families = new Map<string, Family<unknown>>();
  private readonly collectors = new Set<Collector>();

  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.family(name, 'counter', labelNames, () => new Counter(name, help, 'counter', labelNames));
  }

  gauge(name: string, help: string, labelNames: readonly string[] = []): Gauge {
    return this.family(name, 'gauge', labelNames, () => new Gauge(name, help, 'gauge', labelNames));
  }

  histogram(name: string, help: string, labelNames: readonly string[], buckets: readonly number[]): Histogram {
    const family = this.family(name, 'histogram', labelNames, () => new Histogram(name, help, labelNames, buckets));
    if (family.buckets.join() !== buckets.join()) throw new Error(`histogram ${name} exists with buckets [${family.buckets.join(', ')}], asked for [${buckets.join(', ')}]`);
    return family;
  }

  /** The family of `name`, if one was created, to read its series in-process (after `collect()`). */
  find(name: string): Counter | Gauge | Histogram | undefined {
    return this.families.get(name) as Counter | Gauge | Histogram | undefined;
  }

  /** Runs every collector, so gauges read at scrape time are current. */
  collect(): void {
    for (const collect of this.collectors) collect();
  }

  /** Runs `collect` before every exposition until the returned function removes it. */
  addCollector(collect: Collector): () => void {
    this.collectors.add(collect);
    return () => void this.collectors.delete(collect);
  }

  /** The Prometheus text exposition of every family (content type `text/plain; version=0.0.4`). */
  expose(): string {
    this.collect();
    return `${[...this.families.values()].flatMap((family) => family.expose()).join('\n')}\n`;
  }

  private family<F extends Family<unknown>>(name: string, type: MetricType, labelNames: readonly string[], create: () => F): F {
    if (!METRIC_NAME.test(name)) throw new Error(`metric name "${name}" must match ${METRIC_NAME}`);
    const badLabel = labelNames.find((label) => !LABEL_NAME.test(label) || label.startsWith('__'));
    if (badLabel !== undefined) throw new Error(`metric ${name}: label name "${badLabel}" must match ${LABEL_NAME} and not start with __`);
    const existing = this.families.get(name);
    if (existing) {
      if (existing.type !== type || existing.labelNames.join() !== labelNames.join()) {
        throw new Error(`metric ${name} exists as a ${existing.type} with labels {${existing.labelNames.join(', ')}}, asked for a ${type} with {${labelNames.join(', ')}}`);
      }
      return existing as F;
    }
    const family = create();
    this.families.set(name, family as Family<unknown>);
    return family;
  }
}

/** The process's registry: every processor and observed sandbox pool reports here, `/metrics` exposes it. */
export const defaultRegistry = new MetricsRegistry();

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
  /** Milliseconds spent handling records, summed over records (handled or failed): how busy the processor was. */
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
    this.inFlight--;
    this.busyMs += latencyMs;
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

/** What a sandbox pool reports (AgentSandboxPool's `stats` and `reapedCount`). */
export interface ObservablePool {
  readonly stats: { readonly held: number; readonly ready: number; readonly creating: number; readonly pending: number };
  readonly reapedCount: number;
}

/**
 * Reports a sandbox pool as `trialrun_sandbox_pool_sandboxes{state="busy|idle|creating|destroying"}` and
 * `trialrun_sandbox_pool_reaped_total` (read at scrape time, under `pool` = `name`); returns the function that stops it.
 */
export function observeSandboxPool(pool: ObservablePool, name = 'default', registry: MetricsRegistry = defaultRegistry): () => void {
  const sandboxes = registry.gauge('trialrun_sandbox_pool_sandboxes', 'Sandboxes of the pool by state: busy (held by a rollout or verification), idle (warm), creating, destroying.', ['pool', 'state']);
  const reaped = registry.counter('trialrun_sandbox_pool_reaped_total', 'Sandboxes the pool\'s reaper has removed since it started (left by executors that died).', ['pool']);
  return registry.addCollector(() => {
    const { held, ready, creating, pending } = pool.stats;
    for (const [state, value] of [['busy', held], ['idle', ready], ['creating', creating], ['destroying', pending]] as const) sandboxes.set({ pool: name, state }, value);
    const labels = { pool: name };
    reaped.inc(labels, Math.max(0, pool.reapedCount - reaped.get(labels)));
  });
}
