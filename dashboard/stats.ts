import { Z95, type Interval } from '../pipelines/jobs/evaluate/index.js';

/** The normal-approximation interval of a mean (mean ± z·sd/√n); null below two samples, where it says nothing. */
export function meanInterval(mean: number, sampleSd: number, n: number, z = Z95): Interval | null {
  if (n < 2 || !Number.isFinite(sampleSd)) return null;
  const half = (z * sampleSd) / Math.sqrt(n);
  return { low: mean - half, high: mean + half };
}
