import type { Decoding } from '../types.js';

/** Numerically stable log-softmax of linear scores w . x over candidates. */
export function logSoftmax(weights: readonly number[], features: readonly (readonly number[])[]): number[] {
  const scores = features.map((x) => x.reduce((sum, value, i) => sum + value * (weights[i] ?? 0), 0));
  const max = Math.max(...scores);
  const logZ = max + Math.log(scores.reduce((sum, s) => sum + Math.exp(s - max), 0));
  return scores.map((s) => s - logZ);
}

/** A candidate drawn from the distribution (one uniform draw). */
export function sampleIndex(logProbs: readonly number[], random: () => number): number {
  let u = random();
  for (let i = 0; i < logProbs.length; i++) {
    u -= Math.exp(logProbs[i]!);
    if (u <= 0) return i;
  }
  return logProbs.length - 1;
}

/**
 * The most probable candidate; ties are broken by one uniform draw among the tied. When every candidate ties
 * (an untrained policy whose scores are all zero) this is exactly `sampleIndex`'s draw, so a run that decodes
 * greedily replays the episodes of one that samples until the policy's scores first differ.
 */
export function greedyIndex(logProbs: readonly number[], random: () => number): number {
  const best = Math.max(...logProbs);
  const tied = logProbs.flatMap((logProb, i) => (logProb === best ? [i] : []));
  if (tied.length === logProbs.length) return sampleIndex(logProbs, random);
  return tied.length === 1 ? tied[0]! : tied[Math.floor(random() * tied.length)]!;
}

export const chooseIndex = (logProbs: readonly number[], random: () => number, decoding: Decoding): number => (decoding === 'greedy' ? greedyIndex : sampleIndex)(logProbs, random);
