/**
 * What every benchmark shares, so that each compares like with like in the same way:
 *   - `interleave`: the sides of a comparison run once per round, in alternating order (ABBA...), after warm-up
 *     rounds that do not count, so load from elsewhere on the machine lands on every side alike;
 *   - `figures`: min / median / max of the rounds (never a single run);
 *   - the load average at the start and the end of the run, printed and saved beside the figures;
 *   - `BenchReport`: each comparison saved to `bench/results/<bench>.json`, from which `npm run bench:table`
 *     prints (and `-- --write` puts into the README) the table of figures; nobody types them by hand.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { checkoutRoot } from '../schemas/index.js';

export interface Figures {
  readonly min: number;
  readonly median: number;
  readonly max: number;
  readonly n: number;
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) throw new Error('percentile of no values');
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error('median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function figures(values: readonly number[]): Figures {
  return { min: Math.min(...values), median: median(values), max: Math.max(...values), n: values.length };
}

/** `1.2 / 3.4 / 5.6` (min / median / max) with the given number of decimals. */
export const formatFigures = (f: Figures, digits = 2): string => `${f.min.toFixed(digits)} / ${f.median.toFixed(digits)} / ${f.max.toFixed(digits)}`;

/** The 1-minute load average over the core count, e.g. `load 1.84 on 2 cores`. */
export const loadLine = (): string => `load ${loadavg()[0]!.toFixed(2)} on ${cpus().length} cores`;

export interface InterleaveOptions {
  /** Counted rounds (at least 3: one round says nothing about spread). */
  readonly rounds: number;
  /** Rounds run first and not counted. @default 1 */
  readonly warmup?: number;
  /** Called (and awaited) after each counted round with that round's value per side. */
  readonly onRound?: (round: number, values: Readonly<Record<string, number>>) => void | Promise<void>;
}

/**
 * Runs each side once per round and returns every side's values (one per counted round). Each side's function
 * measures itself and returns its figure (a rate, a latency): setup outside the measured part stays out of it.
 * The order alternates by round (A B, B A, ...; for more sides, rotated), so neither side always goes first.
 */
export async function interleave<K extends string>(sides: Readonly<Record<K, () => Promise<number>>>, options: InterleaveOptions): Promise<Record<K, number[]>> {
  if (!Number.isInteger(options.rounds) || options.rounds < 3) throw new Error(`a benchmark compares at least 3 rounds, got ${options.rounds}`);
  const names = Object.keys(sides) as K[];
  const values = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<K, number[]>;
  const warmup = options.warmup ?? 1;
  for (let round = 0; round < warmup + options.rounds; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse();
    const shift = Math.floor(round / 2) % names.length;
    const result: Partial<Record<K, number>> = {};
    for (const name of [...order.slice(shift), ...order.slice(0, shift)]) result[name] = await sides[name]();
    if (round < warmup) continue;
    for (const name of names) values[name].push(result[name]!);
    await options.onRound?.(round - warmup + 1, result as Record<string, number>);
  }
  return values;
}

/** One comparison of a benchmark: our side against its baseline, measured in the same rounds. */
export interface Comparison {
  /** What is measured, e.g. `sink, Kafka -> Parquet`. */
  readonly metric: string;
  readonly unit: string;
  readonly ours: Figures;
  readonly baseline: Figures;
  /** What the baseline is, e.g. `bare consume loop`. */
  readonly baselineName: string;
  /** Per-round ratio ours / baseline (pairs from the same round). */
  readonly ratio: Figures;
  /** Whether a larger value of the metric is better (a rate) or worse (a latency). */
  readonly higherIsBetter: boolean;
  /** The goal, when an issue set one, e.g. `>= 0.5x`. */
  readonly goal?: string;
}

export class BenchReport {
  private readonly comparisons: Comparison[] = [];
  private readonly loadAtStart = loadavg()[0]!;
  private readonly startedAt = new Date().toISOString();

  constructor(
    /** The npm script name without `bench:`, e.g. `analytics`. */
    readonly bench: string,
    /** The exact command, for the reader who wants to reproduce a figure. */
    readonly command: string,
  ) {
    process.stdout.write(`# trialrun bench:${bench}  node ${process.version}  ${cpus().length} cores  ${loadLine()} at start  ${this.startedAt}\n`);
  }

  /** Adds a comparison from the paired per-round values of both sides and prints it. */
  compare(entry: Omit<Comparison, 'ours' | 'baseline' | 'ratio'> & { ours: readonly number[]; baseline: readonly number[] }): Comparison {
    if (entry.ours.length !== entry.baseline.length) throw new Error(`${entry.metric}: ${entry.ours.length} rounds of ours against ${entry.baseline.length} of the baseline`);
    const comparison: Comparison = {
      ...entry,
      ours: figures(entry.ours),
      baseline: figures(entry.baseline),
      ratio: figures(entry.ours.map((value, i) => value / entry.baseline[i]!)),
    };
    this.comparisons.push(comparison);
    const digits = comparison.baseline.median >= 100 ? 0 : 2;
    process.stdout.write(
      `${entry.metric} (${entry.unit}, min / median / max of ${comparison.ours.n} rounds): ours ${formatFigures(comparison.ours, digits)}; ` +
        `${entry.baselineName} ${formatFigures(comparison.baseline, digits)}; ratio ${formatFigures(comparison.ratio)}x${entry.goal ? ` (goal ${entry.goal})` : ''}\n`,
    );
    return comparison;
  }

  /** Writes `bench/results/<bench>.json` in the checkout, with the load at start and end. */
  save(): string {
    const dir = join(checkoutRoot(), 'bench', 'results');
    mkdirSync(dir, { recursive: true });
    const path = join(dir, `${this.bench}.json`);
    const body = {
      bench: this.bench,
      command: this.command,
      startedAt: this.startedAt,
      finishedAt: new Date().toISOString(),
      node: process.version,
      cores: cpus().length,
      load: { start: round2(this.loadAtStart), end: round2(loadavg()[0]!) },
      comparisons: this.comparisons.map((c) => ({ ...c, ours: roundFigures(c.ours), baseline: roundFigures(c.baseline), ratio: roundFigures(c.ratio) })),
    };
    writeFileSync(path, `${JSON.stringify(body, null, 2)}\n`);
    process.stdout.write(`# ${loadLine()} at end; figures saved to ${path} (npm run bench:table)\n`);
    return path;
  }
}

const round2 = (value: number): number => Math.round(value * 100) / 100;
const roundFigures = (f: Figures): Figures => ({ min: round4(f.min), median: round4(f.median), max: round4(f.max), n: f.n });
const round4 = (value: number): number => Number(value.toPrecision(4));
