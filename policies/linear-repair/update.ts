import { decisionAdvantage, type PolicySample, type UpdateOptions } from '../types.js';
import { logSoftmax } from './softmax.js';

export interface AdamState {
  readonly step: number;
  readonly m: readonly number[];
  readonly v: readonly number[];
}

export const freshAdam = (size: number): AdamState => ({ step: 0, m: Array(size).fill(0), v: Array(size).fill(0) });

/**
 * The gradient of the clipped surrogate objective (PPO) for a linear softmax policy: for each decision,
 * ratio * A * (x_chosen - E_pi[x]), dropped where the ratio has left [1-clip, 1+clip] in the direction
 * the advantage pushes. Averaged over samples.
 */
export function surrogateGradient(weights: readonly number[], samples: readonly PolicySample[], clip = 0.2): number[] {
  const gradient = weights.map(() => 0);
  if (samples.length === 0) return gradient;
  for (const sample of samples) {
    for (const [index, decision] of sample.decisions.entries()) {
      const logProbs = logSoftmax(weights, decision.features);
      const ratio = Math.exp(logProbs[decision.chosen]! - decision.logprob);
      const A = decisionAdvantage(sample, index);
      if ((A > 0 && ratio > 1 + clip) || (A < 0 && ratio < 1 - clip)) continue;
      const chosen = decision.features[decision.chosen]!;
      for (let i = 0; i < weights.length; i++) {
        const expected = decision.features.reduce((sum, x, j) => sum + Math.exp(logProbs[j]!) * (x[i] ?? 0), 0);
        gradient[i]! += (ratio * A * ((chosen[i] ?? 0) - expected)) / samples.length;
      }
    }
  }
  return gradient;
}

/** The surrogate objective itself, for the gradient check. */
export function surrogateObjective(weights: readonly number[], samples: readonly PolicySample[]): number {
  let total = 0;
  for (const sample of samples) {
    for (const [index, decision] of sample.decisions.entries()) {
      const ratio = Math.exp(logSoftmax(weights, decision.features)[decision.chosen]! - decision.logprob);
      total += ratio * decisionAdvantage(sample, index);
    }
  }
  return samples.length ? total / samples.length : 0;
}

/** Adam ascent step on the objective. */
export function adamStep(weights: readonly number[], gradient: readonly number[], state: AdamState, options: UpdateOptions = {}): { weights: number[]; state: AdamState } {
  const lr = options.learningRate ?? 0.1;
  const [b1, b2, eps] = [0.9, 0.999, 1e-8];
  const step = state.step + 1;
  const m = gradient.map((g, i) => b1 * state.m[i]! + (1 - b1) * g);
  const v = gradient.map((g, i) => b2 * state.v[i]! + (1 - b2) * g * g);
  const next = weights.map((w, i) => w + (lr * (m[i]! / (1 - b1 ** step))) / (Math.sqrt(v[i]! / (1 - b2 ** step)) + eps));
  return { weights: next, state: { step, m, v } };
}
