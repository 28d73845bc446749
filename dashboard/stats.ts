/** A two-sided 95% interval's z. */
export const Z95 = 1.959963984540054;

export interface Interval {
  readonly low: number;
  readonly high: number;
}

/**
 * The Wilson score interval of a pass rate: unlike the normal approximation it stays inside [0, 1] and
 * is honest at 0 or n passes out of a few, the usual case for one policy version's episodes.
 */
export function wilsonInterval(passes: number, n: number, z = Z95): Interval {
  if (!Number.isInteger(n) || n < 0 || !Number.isInteger(passes) || passes < 0 || passes > n) throw new RangeError(`wilsonInterval: need whole numbers 0 <= passes <= n, got ${passes} of ${n}`);
  if (n === 0) return { low: 0, high: 1 };
  const p = passes / n;
  const z2 = z * z;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (z / (1 + z2 / n)) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  return { low: Math.max(0, centre - half), high: Math.min(1, centre + half) };
}

/** The normal-approximation interval of a mean (mean ± z·sd/√n); null below two samples, where it says nothing. */
export function meanInterval(mean: number, sampleSd: number, n: number, z = Z95): Interval | null {
  if (n < 2 || !Number.isFinite(sampleSd)) return null;
  const half = (z * sampleSd) / Math.sqrt(n);
  return { low: mean - half, high: mean + half };
}
