/**
 * What every benchmark shares, so that each compares like with like in the same way:
 *   - `interleave`: the sides of a comparison run once per round, in alternating order (ABBA...), after warm-up
 *     rounds that do not count, so load from elsewhere on the machine lands on every side alike;
 *   - `figures`: min / median / max of the rounds (never a single run);
 *   - the load average at the start and the end of the run, printed and saved beside the figures;
 *   - `BenchReport`: each comparison saved to `bench/results/<bench>.json`, from which `npm run bench:table`
 *     prints (and `-- --write` puts into the README) the table of figures; nobody types them by hand;
 *   - `benchArgs`: the command line, parsed strictly; a bad flag or value is a one-line error and exit 2, `--help`
 *     prints the usage and the options and exits 0.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { optionLines, type Options } from '../cli/command.js';
import { choiceOption, intOption, numberOption, requiredInt, type OptionValues } from '../cli/options.js';
import { checkoutRoot, ConfigError } from '../schemas/index.js';

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
    /**
     * What tells this run's results from the same bench's at other settings (`1m` for a million rows): saved as
     * `bench/results/<bench>-<variant>.json`, so a run at one size does not replace the figures at another.
     * @default none: `<bench>.json`
     */
    readonly variant?: string,
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

  /** Writes `bench/results/<bench>[-<variant>].json` in the checkout, with the load at start and end. */
  save(): string {
    const dir = join(checkoutRoot(), 'bench', 'results');
    mkdirSync(dir, { recursive: true });
    const path = join(dir, `${this.bench}${this.variant ? `-${this.variant}` : ''}.json`);
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

/** Where a bench's help and usage errors go, and how it exits; a test passes its own. */
export interface BenchIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly exit: (code: number) => never;
}

const processIo: BenchIo = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  exit: (code) => process.exit(code),
};

/** The option values parseArgs gives for this option table. */
export type BenchValues<O extends Options> = ReturnType<typeof parseArgs<{ options: O; strict: true }>>['values'];

/**
 * A bench's parsed command line and the checks of its values. A value that breaks a check (the CLI's own:
 * intOption, numberOption, choiceOption) is reported as `<command>: <what was wrong>` and the usage, exit 2.
 */
export class BenchArgs<O extends Options> {
  constructor(
    /** The command as its reader types it, e.g. `bench:loop`. */
    readonly command: string,
    private readonly usage: readonly string[],
    readonly values: BenchValues<O>,
    private readonly io: BenchIo,
  ) {}

  /** Reports a bad command line on stderr and exits 2. */
  fail(message: string): never {
    this.io.err(`${this.command}: ${message}\n${usageBlock(this.usage)}\n(--help lists the options)\n`);
    return this.io.exit(2);
  }

  /** Runs `read`; a ConfigError from it (a bad value) is `fail`ed, anything else is thrown on. */
  check<T>(read: () => T): T {
    try {
      return read();
    } catch (error) {
      if (error instanceof ConfigError) return this.fail(error.message);
      throw error;
    }
  }

  /** A whole number of at least `min` (default 1), for an option the table gives a default. */
  int(name: keyof O & string, min = 1): number {
    return this.check(() => requiredInt(this.optionValues, name, min));
  }

  /** A whole number of at least `min`, or undefined when not given. */
  optionalInt(name: keyof O & string, min = 1): number | undefined {
    return this.check(() => intOption(this.optionValues, name, min));
  }

  /** A finite number in the range (see numberOption). */
  number(name: keyof O & string, range: { above: number; below?: number; inclusive?: boolean }): number {
    return this.check(() => numberOption(this.optionValues, name, range));
  }

  /** One of `allowed`. */
  choice<T extends string>(name: keyof O & string, allowed: readonly T[]): T {
    return this.check(() => choiceOption(this.optionValues, name, allowed));
  }

  /** One of `allowed`, or undefined when not given. */
  optionalChoice<T extends string>(name: keyof O & string, allowed: readonly T[]): T | undefined {
    return this.optionValues[name] === undefined ? undefined : this.choice(name, allowed);
  }

  /** A comma-separated list of words from `allowed`, e.g. `--backends docker,process`. */
  choices<T extends string>(name: keyof O & string, allowed: readonly T[]): T[] {
    const raw = String(this.optionValues[name] ?? '');
    const words = raw.split(',');
    for (const word of words) {
      if (!(allowed as readonly string[]).includes(word)) this.fail(`--${name} takes ${allowed.join(', ')} (comma-separated), got "${raw}"`);
    }
    return words as T[];
  }

  private get optionValues(): OptionValues {
    return this.values as unknown as OptionValues;
  }
}

const usageBlock = (usage: readonly string[]): string => usage.map((line, i) => `${i === 0 ? 'Usage: ' : '       '}${line}`).join('\n');

/**
 * Parses a bench's command line against its option table, strictly (no positionals): an unknown option or a
 * missing value is `<command>: <what was wrong>` and the usage on stderr, exit 2; `--help` (`-h`) prints the
 * usage and every option with its default on stdout, exit 0. `usage` is the bench's example command line(s).
 */
export function benchArgs<O extends Options>(
  command: string,
  usage: string | readonly string[],
  options: O,
  extra: { readonly help?: Readonly<Partial<Record<keyof O & string, string>>>; readonly argv?: readonly string[]; readonly io?: BenchIo } = {},
): BenchArgs<O> {
  const io = extra.io ?? processIo;
  const lines = typeof usage === 'string' ? [usage] : usage;
  let parsed;
  try {
    parsed = parseArgs({ args: [...(extra.argv ?? process.argv.slice(2))], options: { ...options, help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: false });
  } catch (error) {
    const args = new BenchArgs<O>(command, lines, {} as BenchValues<O>, io);
    return args.fail(parseError(error));
  }
  const { help, ...values } = parsed.values as Record<string, unknown>;
  if (help === true) {
    io.out(`${usageBlock(lines)}\n\nOptions:\n${optionLines(options, extra.help as Record<string, string> | undefined).join('\n')}\n`);
    return io.exit(0);
  }
  return new BenchArgs<O>(command, lines, values as BenchValues<O>, io);
}

/** parseArgs' message, less its advice on positionals (no bench takes any). */
function parseError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message
    .replace(/^Unknown option '([^']*)'.*$/s, "unknown option '$1'")
    .replace(/^Unexpected argument '([^']*)'\..*$/s, "unexpected argument '$1' (options start with --)")
    .replace(/^Option '([^']*)' argument missing$/, "option '$1' needs a value")
    .replace(/^Option '([^']*)' does not take an argument$/, "option '$1' takes no value");
}
