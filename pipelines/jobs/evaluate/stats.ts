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
  if (n === 0) return { low: 0, high: 1 };
  const p = successes / n;
  const z2 = z * z;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (z / (1 + z2 / n)) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  return { low: Math.max(0, centre - half), high: Math.min(1, centre + half) };
}

/**
 * 95% interval of the difference of two success rates, after - before (Newcombe's hybrid score method, from
 * the two Wilson intervals). It treats the two samples as independent; episodes paired by task and seed are
 * positively correlated, so the true interval is narrower and this one errs on the side of "within noise".
 */
export function differenceInterval(before: { successes: number; n: number }, after: { successes: number; n: number }, z = Z95): Interval {
  const b = wilsonInterval(before.successes, before.n, z);
  const a = wilsonInterval(after.successes, after.n, z);
  const pb = before.n ? before.successes / before.n : 0;
  const pa = after.n ? after.successes / after.n : 0;
  const d = pa - pb;
  return { low: d - Math.sqrt((pa - a.low) ** 2 + (b.high - pb) ** 2), high: d + Math.sqrt((a.high - pa) ** 2 + (pb - b.low) ** 2) };
}

/** One budget's before -> after comparison, with what it says in words. */
export interface RateComparison {
  readonly before: { readonly successes: number; readonly episodes: number; readonly rate: number; readonly interval: Interval };
  readonly after: { readonly successes: number; readonly episodes: number; readonly rate: number; readonly interval: Interval };
  /** after - before, and its 95% interval. */
  readonly difference: { readonly value: number; readonly interval: Interval };
  /** after / before; null when before is 0. */
  readonly ratio: number | null;
  /** `improved` / `worse` only when the difference's interval excludes 0. */
  readonly verdict: 'improved' | 'worse' | 'within noise';
}

export function compareRates(before: { successes: number; episodes: number }, after: { successes: number; episodes: number }): RateComparison {
  const side = (s: { successes: number; episodes: number }) => ({
    successes: s.successes,
    episodes: s.episodes,
    rate: s.episodes ? s.successes / s.episodes : 0,
    interval: wilsonInterval(s.successes, s.episodes),
  });
  const b = side(before);
  const a = side(after);
  const interval = differenceInterval({ successes: b.successes, n: b.episodes }, { successes: a.successes, n: a.episodes });
  return {
    before: b,
    after: a,
    difference: { value: a.rate - b.rate, interval },
    // From the counts, so equal shares give exactly 1 (no rounding of two divisions).
    ratio: b.successes > 0 && a.episodes > 0 ? (a.successes * b.episodes) / (b.successes * a.episodes) : null,
    verdict: interval.low > 0 ? 'improved' : interval.high < 0 ? 'worse' : 'within noise',
  };
}
