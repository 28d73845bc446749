/** A two-sided 95% interval's z. */
export const Z95 = 1.959963984540054;

export interface Interval {
  readonly low: number;
  readonly high: number;
}

/**
 * The Wilson score interval of a success rate: unlike the normal approximation it stays inside [0, 1] and
 * is honest at 0 or n successes out of a few, the usual case for one policy version's episodes.
 */
export function wilsonInterval(successes: number, n: number, z = Z95): Interval {
  if (!Number.isInteger(n) || n < 0 || !Number.isInteger(successes) || successes < 0 || successes > n) {
    throw new RangeError(`wilsonInterval: need whole numbers 0 <= passes <= n, got ${successes} of ${n}`);
  }
  return wilsonRateInterval(n ? successes / n : 0, n, z);
}

/** Wilson's interval of rate p from n independent trials; n may be an effective (fractional) count (effectiveEpisodes). */
export function wilsonRateInterval(p: number, n: number, z = Z95): Interval {
  if (!(p >= 0 && p <= 1) || !(n >= 0) || !Number.isFinite(n)) throw new RangeError(`wilsonRateInterval: need a rate in [0, 1] and a finite count >= 0, got ${p} of ${n}`);
  if (n === 0) return { low: 0, high: 1 };
  const z2 = z * z;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (z / (1 + z2 / n)) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  // The interval always holds p; bounded by it, since at p = 0 or 1 rounding can leave a bound 1e-17 beyond it.
  return { low: Math.min(p, Math.max(0, centre - half)), high: Math.max(p, Math.min(1, centre + half)) };
}

/** Successes out of episodes, for one task or a whole evaluation. */
export interface Tally {
  readonly successes: number;
  readonly episodes: number;
}

/**
 * How many independent episodes a rate measured over tasks is worth. Episodes of one task are correlated
 * (the same bug; a greedy policy plays the same episode again), so the rate's variance is the cluster-robust
 * one of a ratio estimator, k/(k-1) * sum (y_i - p m_i)^2 / (sum m_i)^2 over k tasks, and the effective count
 * is p(1-p) over it (Kish's design effect), never above the episodes. Without tasks, or at a rate of 0 or 1,
 * it is the episodes.
 */
export function effectiveEpisodes(tasks: readonly Tally[]): number {
  const episodes = tasks.reduce((sum, t) => sum + t.episodes, 0);
  const p = episodes ? tasks.reduce((sum, t) => sum + t.successes, 0) / episodes : 0;
  const k = tasks.length;
  if (k < 2 || p === 0 || p === 1) return episodes;
  const variance = (k / (k - 1)) * tasks.reduce((sum, t) => sum + (t.successes - p * t.episodes) ** 2, 0) / episodes ** 2;
  return variance > 0 ? Math.min(episodes, (p * (1 - p)) / variance) : episodes;
}

/**
 * 95% interval of the difference of two success rates, after - before (Newcombe's hybrid score method, from
 * the two Wilson intervals). It treats the two samples as independent; episodes paired by task and seed are
 * positively correlated, so the true interval is narrower and this one errs on the side of "within noise".
 * `n` may be an effective count (effectiveEpisodes).
 */
export function differenceInterval(before: { successes: number; n: number }, after: { successes: number; n: number }, z = Z95): Interval {
  const side = (s: { successes: number; n: number }) => {
    const rate = s.n ? s.successes / s.n : 0;
    return { rate, interval: wilsonRateInterval(rate, s.n, z) };
  };
  return newcombe(side(before), side(after));
}

/** Newcombe's hybrid score interval of after - before, from each rate and its own Wilson interval. */
function newcombe(before: { rate: number; interval: Interval }, after: { rate: number; interval: Interval }): Interval {
  const [pb, b, pa, a] = [before.rate, before.interval, after.rate, after.interval];
  const d = pa - pb;
  return { low: d - Math.sqrt((pa - a.low) ** 2 + (b.high - pb) ** 2), high: d + Math.sqrt((a.high - pa) ** 2 + (pb - b.low) ** 2) };
}

/** One side of a comparison: its counts, rate and 95% interval. */
export interface RateSide {
  readonly successes: number;
  readonly episodes: number;
  /** What the episodes are worth as independent ones (effectiveEpisodes); the episodes when no tasks were given. */
  readonly effectiveEpisodes: number;
  readonly rate: number;
  readonly interval: Interval;
}

/** One budget's before -> after comparison, with what it says in words. */
export interface RateComparison {
  readonly before: RateSide;
  readonly after: RateSide;
  /** after - before, and its 95% interval. */
  readonly difference: { readonly value: number; readonly interval: Interval };
  /** after / before; null when before is 0. */
  readonly ratio: number | null;
  /** `improved` / `worse` only when the difference's interval excludes 0. */
  readonly verdict: 'improved' | 'worse' | 'within noise';
}

/** A side's totals, with its tasks' tallies when the episodes come several to a task (the intervals then widen by their correlation). */
export interface RateSample extends Tally {
  readonly tasks?: readonly Tally[];
}

export function compareRates(before: RateSample, after: RateSample): RateComparison {
  const side = (s: RateSample): RateSide => {
    const rate = s.episodes ? s.successes / s.episodes : 0;
    const effective = s.tasks ? effectiveEpisodes(s.tasks) : s.episodes;
    return { successes: s.successes, episodes: s.episodes, effectiveEpisodes: effective, rate, interval: wilsonRateInterval(rate, effective, Z95) };
  };
  const b = side(before);
  const a = side(after);
  // The difference from the sides' own intervals, which already count what their episodes are worth.
  const interval = newcombe(b, a);
  return {
    before: b,
    after: a,
    difference: { value: a.rate - b.rate, interval },
    // From the counts, so equal shares give exactly 1 (no rounding of two divisions).
    ratio: b.successes > 0 && a.episodes > 0 ? (a.successes * b.episodes) / (b.successes * a.episodes) : null,
    verdict: interval.low > 0 ? 'improved' : interval.high < 0 ? 'worse' : 'within noise',
  };
}

/** A mean with its 95% interval, from per-unit values treated as independent draws (normal approximation). */
export interface MeanSide {
  readonly mean: number;
  readonly units: number;
  readonly interval: Interval;
}

/** Mean of `values` and its 95% interval (mean +- z x the standard error; a single value has a zero-width interval). */
export function meanInterval(values: readonly number[], z = Z95): MeanSide {
  const n = values.length;
  const mean = n ? values.reduce((a, b) => a + b, 0) / n : 0;
  const variance = n > 1 ? values.reduce((sum, v) => sum + (v - mean) ** 2, 0) / (n - 1) : 0;
  const half = z * Math.sqrt(variance / Math.max(1, n));
  return { mean, units: n, interval: { low: mean - half, high: mean + half } };
}

export interface MeanComparison {
  readonly before: MeanSide;
  readonly after: MeanSide;
  /** The paired difference (after - before, task by task) and its 95% interval. */
  readonly difference: MeanSide;
  readonly ratio: number | null;
  readonly verdict: RateComparison['verdict'];
}

/**
 * Mean reward before and after on the same tasks and episode seeds. The unit is the task (its episodes' mean), since a
 * task's episodes are correlated; the difference is paired task by task, which removes the tasks' own spread from it.
 */
export function compareMeans(before: Readonly<Record<string, readonly number[]>>, after: Readonly<Record<string, readonly number[]>>): MeanComparison {
  const tasks = Object.keys(before).filter((task) => after[task] !== undefined).sort();
  const mean = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
  const b = tasks.map((task) => mean(before[task]!));
  const a = tasks.map((task) => mean(after[task]!));
  const difference = meanInterval(a.map((value, i) => value - b[i]!));
  const sides = { before: meanInterval(b), after: meanInterval(a) };
  return {
    ...sides,
    difference,
    ratio: sides.before.mean > 0 ? sides.after.mean / sides.before.mean : null,
    verdict: difference.interval.low > 0 ? 'improved' : difference.interval.high < 0 ? 'worse' : 'within noise',
  };
}
