import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRandom } from '../types.js';
import type { PolicySample } from '../types.js';
import { adamStep, freshAdam, surrogateGradient, surrogateObjective } from './update.js';
import { logSoftmax } from './softmax.js';

function randomSamples(weights: number[], random: () => number): PolicySample[] {
  return Array.from({ length: 5 }, (_, s) => ({
    advantage: s % 2 ? 1.3 : -0.7,
    weight: 1,
    decisions: Array.from({ length: 3 }, () => {
      const features = Array.from({ length: 4 }, () => weights.map(() => random() * 2 - 1));
      const chosen = Math.floor(random() * features.length);
      // Old log-probs near the current ones keep every ratio inside the clip range.
      return { features, chosen, logprob: logSoftmax(weights, features)[chosen]! + (random() - 0.5) * 0.05 };
    }),
  }));
}

test('surrogate gradient matches finite differences', () => {
  const random = seededRandom('gradient-check');
  const weights = [0.3, -0.2, 0.5, 0.1, -0.4];
  const samples = randomSamples(weights, random);
  const analytic = surrogateGradient(weights, samples, 10);
  const h = 1e-5;
  weights.forEach((_, i) => {
    const plus = weights.map((w, j) => (j === i ? w + h : w));
    const minus = weights.map((w, j) => (j === i ? w - h : w));
    const numeric = (surrogateObjective(plus, samples) - surrogateObjective(minus, samples)) / (2 * h);
    assert.ok(Math.abs(numeric - analytic[i]!) < 1e-6, `d/dw${i}: numeric ${numeric} vs analytic ${analytic[i]}`);
  });
});

test('clipping drops decisions whose ratio already moved past the clip in the advantage direction', () => {
  const features = [[1, 0], [0, 1]];
  const weights = [0, 0];
  // ratio = 0.5 / 0.1 = 5 > 1.2 with a positive advantage: no further push.
  const sample: PolicySample = { advantage: 1, weight: 1, decisions: [{ features, chosen: 0, logprob: Math.log(0.1) }] };
  assert.deepEqual(surrogateGradient(weights, [sample], 0.2), [0, 0]);
  assert.notDeepEqual(surrogateGradient(weights, [{ ...sample, advantage: -1 }], 0.2), [0, 0]);
});

test('Adam ascends: a positive advantage raises the chosen action probability', () => {
  const features = [[1, 0], [0, 1]];
  let weights = [0, 0];
  let state = freshAdam(2);
  for (let i = 0; i < 20; i++) {
    const logprob = logSoftmax(weights, features)[0]!;
    const gradient = surrogateGradient(weights, [{ advantage: 1, weight: 1, decisions: [{ features, chosen: 0, logprob }] }]);
    ({ weights, state } = adamStep(weights, gradient, state, { learningRate: 0.1 }));
  }
  assert.ok(Math.exp(logSoftmax(weights, features)[0]!) > 0.8);
});
