import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { seededRandom, type PolicySample } from '../types.js';
import { PARAM_NAMES } from './graphs.js';
import { freshAdamState, initialParams, type OnnxParams } from './params.js';
import { referenceGradient, referenceLogProbs, referenceObjective, referenceUpdate } from './reference.js';
import { OnnxTrainer } from './trainer.js';
import { resolveUpdateOptions } from './update-options.js';

const CLIP = 0.2;
let trainer: OnnxTrainer;
before(async () => {
  trainer = await OnnxTrainer.create();
});
after(async () => {
  await trainer.release();
});

/** Parameters with every path live: random hidden, output and skip weights. */
function liveParams(seed: string, hiddenSize: number): OnnxParams {
  const random = seededRandom(`${seed}/live`);
  const params = initialParams(seed, { hiddenSize });
  for (const name of ['hiddenBias', 'outputWeights', 'skipWeights'] as const) params.tensors[name].forEach((_, i, tensor) => (tensor[i] = random() * 1.6 - 0.8));
  return params;
}

/**
 * Decisions of varied candidate counts (so padding is exercised), mixed-sign advantages and staleness
 * weights, and behaviour log-probs scattered around the current ones so that some ratios sit inside the
 * clip range and some beyond it on either side.
 */
function randomSamples(params: OnnxParams, seed: string, count = 6): PolicySample[] {
  const random = seededRandom(seed);
  const F = params.featureNames.length;
  return Array.from({ length: count }, (_, s) => ({
    advantage: (random() - 0.5) * 3,
    // Some samples credit their earlier decisions apart from the last (PolicyKind.earlierDecisionsFailed).
    ...(s % 2 === 1 ? { earlierAdvantage: (random() - 0.5) * 3 } : {}),
    weight: s % 3 === 0 ? 0.5 : 1,
    decisions: Array.from({ length: 1 + Math.floor(random() * 3) }, () => {
      const features = Array.from({ length: 1 + Math.floor(random() * 7) }, () => Array.from({ length: F }, () => (random() < 0.6 ? 0 : random() * 2 - 1)));
      const chosen = Math.floor(random() * features.length);
      return { features, chosen, logprob: Math.min(0, referenceLogProbs(params, features)[chosen]! + (random() - 0.5) * 0.8) };
    }),
  }));
}

/** Central differences of the float64 reference objective, over the float32 steps actually stored. */
function numericGradient(params: OnnxParams, samples: PolicySample[], h = 1e-3): Record<(typeof PARAM_NAMES)[number], number[]> {
  const result = {} as Record<(typeof PARAM_NAMES)[number], number[]>;
  for (const name of PARAM_NAMES) {
    const tensor = params.tensors[name];
    result[name] = Array.from(tensor, (value, i) => {
      tensor[i] = value + h;
      const plusValue = tensor[i]!;
      const plus = referenceObjective(params, samples, CLIP);
      tensor[i] = value - h;
      const minusValue = tensor[i]!;
      const minus = referenceObjective(params, samples, CLIP);
      tensor[i] = value;
      return (plus - minus) / (plusValue - minusValue);
    });
  }
  return result;
}

test('the ONNX update model computes the gradient of its objective: finite differences agree', async () => {
  const params = liveParams('finite-difference', 5);
  const samples = randomSamples(params, 'finite-difference/samples', 12);
  const ratios = samples.flatMap((s) => s.decisions.map((d) => Math.exp(referenceLogProbs(params, d.features)[d.chosen]! - d.logprob)));
  assert.ok(ratios.some((r) => r > 1 + CLIP) && ratios.some((r) => r < 1 - CLIP) && ratios.some((r) => Math.abs(r - 1) < CLIP), 'the batch exercises both sides of the clip');

  const numeric = numericGradient(params, samples);
  const { gradient, loss } = await trainer.gradient(params, samples, CLIP);
  const reference = referenceGradient(params, samples, CLIP);
  assert.ok(Math.abs(loss + referenceObjective(params, samples, CLIP)) < 1e-5, `ONNX loss ${loss} is the negated objective`);
  let checked = 0;
  for (const name of PARAM_NAMES) {
    numeric[name].forEach((expected, i) => {
      const onnx = gradient[name][i]!;
      assert.ok(Math.abs(onnx - expected) <= 1e-4 + 1e-3 * Math.abs(expected), `${name}[${i}]: ONNX ${onnx} vs numeric ${expected}`);
      assert.ok(Math.abs(reference[name][i]! - expected) <= 1e-6 + 1e-5 * Math.abs(expected), `${name}[${i}]: reference ${reference[name][i]} vs numeric ${expected}`);
      checked++;
    });
  }
  assert.ok(gradient.hiddenWeights.some((g) => Math.abs(g) > 1e-3) && gradient.outputWeights.some((g) => Math.abs(g) > 1e-3), 'the check covers non-trivial gradients');
  assert.equal(checked, params.featureNames.length * 5 + 5 + 5 + params.featureNames.length);
});

test('Adam steps through ONNX match the plain TypeScript update', async () => {
  const params = liveParams('adam', 8);
  const samples = randomSamples(params, 'adam/samples', 10);
  const options = { learningRate: 0.05, epochs: 3 };
  const onnx = await trainer.update(params, freshAdamState(params), samples, options);
  const reference = referenceUpdate(params, freshAdamState(params), samples, resolveUpdateOptions(options));
  assert.equal(onnx.adamState.step, 3);
  assert.equal(reference.adamState.step, 3);
  for (const name of PARAM_NAMES) {
    onnx.params.tensors[name].forEach((value, i) => {
      assert.ok(Math.abs(value - reference.params.tensors[name][i]!) < 1e-4, `${name}[${i}]: ONNX ${value} vs reference ${reference.params.tensors[name][i]}`);
    });
  }
  assert.ok(Math.abs(onnx.metrics.gradNorm - reference.gradNorm) < 1e-4 * Math.max(1, reference.gradNorm));
  assert.ok(referenceObjective(onnx.params, samples, CLIP) > referenceObjective(params, samples, CLIP), 'the steps ascend the objective');
});
