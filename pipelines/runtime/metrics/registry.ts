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

/** A family whose series are one number each (counters and gauges). */
abstract class ValueFamily extends Family<{ value: number }> {
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

export class Counter extends ValueFamily {
  inc(labels: Labels, by = 1): void {
    if (!(by >= 0)) throw new Error(`counter ${this.name} can only go up, got ${by}`);
    this.seriesOf(labels).value += by;
  }
}

export class Gauge extends ValueFamily {
  set(labels: Labels, value: number): void {
    this.seriesOf(labels).value = value;
  }

  inc(labels: Labels, by = 1): void {
    this.seriesOf(labels).value += by;
  }

  dec(labels: Labels, by = 1): void {
    this.seriesOf(labels).value -= by;
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
