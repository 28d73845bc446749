import { decisionAdvantage, type PolicySample } from '../types.js';
import { PARAM_NAMES, type ParamName } from './graphs.js';
import type { OnnxAdamState, OnnxParams, ParamTensors } from './params.js';
import type { ResolvedUpdateOptions } from './update-options.js';

/**
 * The ONNX models' maths in plain TypeScript loops (float64 arithmetic): the baseline the learner
 * benchmark measures the ONNX update against, and a second, independent check of its gradient.
 */

export type ParamGradients = Readonly<Record<ParamName, Float64Array>>;

interface CandidateForward {
  /** tanh activations per candidate. */
  readonly hidden: Float64Array[];
  readonly logProbs: Float64Array;
}

function forwardDecision(params: OnnxParams, candidates: readonly (readonly number[])[]): CandidateForward {
  const { hiddenWeights, hiddenBias, outputWeights, skipWeights } = params.tensors;
  const F = params.featureNames.length;
  const H = params.hiddenSize;
  const hidden: Float64Array[] = [];
  const scores = new Float64Array(candidates.length);
  candidates.forEach((x, c) => {
    const h = new Float64Array(H);
    let score = 0;
    for (let j = 0; j < H; j++) {
      let z = hiddenBias[j]!;
      for (let i = 0; i < F; i++) z += x[i]! * hiddenWeights[i * H + j]!;
      h[j] = Math.tanh(z);
      score += outputWeights[j]! * h[j]!;
    }
    for (let i = 0; i < F; i++) score += skipWeights[i]! * x[i]!;
    hidden.push(h);
    scores[c] = score;
  });
  let max = Number.NEGATIVE_INFINITY;
  for (const s of scores) max = Math.max(max, s);
  let sum = 0;
  for (const s of scores) sum += Math.exp(s - max);
  const logZ = max + Math.log(sum);
  return { hidden, logProbs: scores.map((s) => s - logZ) };
}

export function referenceLogProbs(params: OnnxParams, candidates: readonly (readonly number[])[]): number[] {
  return [...forwardDecision(params, candidates).logProbs];
}

const isClipped = (advantage: number, ratio: number, clip: number): boolean => (advantage > 0 && ratio > 1 + clip) || (advantage < 0 && ratio < 1 - clip);

/** The clipped surrogate objective J (to be maximised); the ONNX update model outputs -J as its loss. */
export function referenceObjective(params: OnnxParams, samples: readonly PolicySample[], clip: number): number {
  let total = 0;
  for (const sample of samples) {
    for (const [index, decision] of sample.decisions.entries()) {
      const advantage = decisionAdvantage(sample, index);
      const ratio = Math.exp(forwardDecision(params, decision.features).logProbs[decision.chosen]! - decision.logprob);
      total += Math.min(ratio * advantage, Math.min(Math.max(ratio, 1 - clip), 1 + clip) * advantage);
    }
  }
  return samples.length ? total / samples.length : 0;
}

/** dJ/dparams, by the chain rule through log-softmax, the skip path and the tanh layer. */
export function referenceGradient(params: OnnxParams, samples: readonly PolicySample[], clip: number): ParamGradients {
  const F = params.featureNames.length;
  const H = params.hiddenSize;
  const { outputWeights } = params.tensors;
  const gradient = { hiddenWeights: new Float64Array(F * H), hiddenBias: new Float64Array(H), outputWeights: new Float64Array(H), skipWeights: new Float64Array(F) };
  for (const sample of samples) {
    for (const [index, decision] of sample.decisions.entries()) {
      const advantage = decisionAdvantage(sample, index);
      const { hidden, logProbs } = forwardDecision(params, decision.features);
      const ratio = Math.exp(logProbs[decision.chosen]! - decision.logprob);
      if (isClipped(advantage, ratio, clip)) continue;
      const upstream = (ratio * advantage) / samples.length;
      decision.features.forEach((x, c) => {
        // d logp_chosen / d score_c = [c == chosen] - p_c
        const ds = upstream * ((c === decision.chosen ? 1 : 0) - Math.exp(logProbs[c]!));
        const h = hidden[c]!;
        for (let i = 0; i < F; i++) gradient.skipWeights[i]! += ds * x[i]!;
        for (let j = 0; j < H; j++) {
          gradient.outputWeights[j]! += ds * h[j]!;
          const dz = ds * outputWeights[j]! * (1 - h[j]! * h[j]!);
          gradient.hiddenBias[j]! += dz;
          for (let i = 0; i < F; i++) gradient.hiddenWeights[i * H + j]! += dz * x[i]!;
        }
      });
    }
  }
  return gradient;
}

/** One Adam ascent step per epoch, exactly as the ONNX update model takes it. */
export function referenceUpdate(
  params: OnnxParams,
  adam: OnnxAdamState,
  samples: readonly PolicySample[],
  options: ResolvedUpdateOptions,
): { params: OnnxParams; adamState: OnnxAdamState; gradNorm: number } {
  let current = params;
  let state = adam;
  let gradNorm = 0;
  for (let epoch = 0; epoch < options.epochs; epoch++) {
    const gradient = referenceGradient(current, samples, options.clip);
    gradNorm = Math.sqrt(PARAM_NAMES.reduce((sum, name) => sum + gradient[name].reduce((s, g) => s + g * g, 0), 0));
    const step = state.step + 1;
    const stepSize = options.learningRate / (1 - options.beta1 ** step);
    const secondCorrection = 1 - options.beta2 ** step;
    const next = {} as Record<ParamName, Float32Array>;
    const m = {} as Record<ParamName, Float32Array>;
    const v = {} as Record<ParamName, Float32Array>;
    for (const name of PARAM_NAMES) {
      const g = gradient[name];
      m[name] = state.m[name].map((value, i) => options.beta1 * value + (1 - options.beta1) * g[i]!);
      v[name] = state.v[name].map((value, i) => options.beta2 * value + (1 - options.beta2) * g[i]! * g[i]!);
      next[name] = current.tensors[name].map((value, i) => value + (stepSize * m[name][i]!) / (Math.sqrt(v[name][i]! / secondCorrection) + options.epsilon));
    }
    current = { ...current, tensors: next as ParamTensors };
    state = { step, m, v };
  }
  return { params: current, adamState: state, gradNorm };
}
