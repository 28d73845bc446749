/**
 * The learner benchmark's baseline: the same PPO-clip + Adam step as the ONNX update model, written as a
 * TypeScript engineer would tune it (float32 parameters read once into locals, one packed feature buffer per
 * decision, every scratch array allocated once and reused, the forward pass not repeated for the gradient).
 * `policies/onnx-repair/reference.ts` stays the readable float64 oracle that tests check gradients against;
 * comparing the ONNX graph with the oracle would flatter the graph. The bench checks this step against the
 * oracle before timing it.
 */
import type { OnnxParams } from '../policies/onnx-repair/index.js';
import type { PolicySample } from '../policies/index.js';

interface AdamState {
  readonly step: number;
  readonly m: Readonly<Record<ParamKey, Float32Array>>;
  readonly v: Readonly<Record<ParamKey, Float32Array>>;
}

type ParamKey = 'hiddenWeights' | 'hiddenBias' | 'outputWeights' | 'skipWeights';
const KEYS: readonly ParamKey[] = ['hiddenWeights', 'hiddenBias', 'outputWeights', 'skipWeights'];

export interface TunedOptions {
  readonly learningRate: number;
  readonly clip: number;
  readonly beta1: number;
  readonly beta2: number;
  readonly epsilon: number;
}

export class TunedUpdate {
  private readonly F: number;
  private readonly H: number;
  private readonly grad: Record<ParamKey, Float64Array>;
  private features = new Float64Array(0);
  private hidden = new Float64Array(0);
  private scores = new Float64Array(0);

  constructor(params: OnnxParams) {
    this.F = params.featureNames.length;
    this.H = params.hiddenSize;
    this.grad = { hiddenWeights: new Float64Array(this.F * this.H), hiddenBias: new Float64Array(this.H), outputWeights: new Float64Array(this.H), skipWeights: new Float64Array(this.F) };
  }

  /** One Adam ascent step on the clipped surrogate; returns new tensors and moments (inputs untouched). */
  step(params: OnnxParams, adam: AdamState, samples: readonly PolicySample[], options: TunedOptions): { tensors: Record<ParamKey, Float32Array>; adam: AdamState; gradNorm: number } {
    const { F, H, grad } = this;
    const W = params.tensors.hiddenWeights;
    const b = params.tensors.hiddenBias;
    const out = params.tensors.outputWeights;
    const skip = params.tensors.skipWeights;
    for (const key of KEYS) grad[key].fill(0);
    const inverseCount = samples.length ? 1 / samples.length : 0;
    for (const sample of samples) {
      const advantage = sample.advantage * sample.weight;
      for (const decision of sample.decisions) {
        const C = decision.features.length;
        if (this.features.length < C * F) this.features = new Float64Array(C * F);
        if (this.hidden.length < C * H) this.hidden = new Float64Array(C * H);
        if (this.scores.length < C) this.scores = new Float64Array(C);
        const x = this.features;
        const h = this.hidden;
        const s = this.scores;
        for (let c = 0; c < C; c++) {
          const row = decision.features[c]!;
          for (let i = 0; i < F; i++) x[c * F + i] = row[i]!;
        }
        let max = -Infinity;
        for (let c = 0; c < C; c++) {
          let score = 0;
          const xo = c * F;
          const ho = c * H;
          for (let j = 0; j < H; j++) h[ho + j] = b[j]!;
          for (let i = 0; i < F; i++) {
            const xi = x[xo + i]!;
            if (xi === 0) continue;
            score += skip[i]! * xi;
            const wo = i * H;
            for (let j = 0; j < H; j++) h[ho + j] = h[ho + j]! + xi * W[wo + j]!;
          }
          for (let j = 0; j < H; j++) {
            const t = Math.tanh(h[ho + j]!);
            h[ho + j] = t;
            score += out[j]! * t;
          }
          s[c] = score;
          if (score > max) max = score;
        }
        let sum = 0;
        for (let c = 0; c < C; c++) sum += Math.exp(s[c]! - max);
        const logZ = max + Math.log(sum);
        const ratio = Math.exp(s[decision.chosen]! - logZ - decision.logprob);
        if ((advantage > 0 && ratio > 1 + options.clip) || (advantage < 0 && ratio < 1 - options.clip)) continue;
        const upstream = ratio * advantage * inverseCount;
        for (let c = 0; c < C; c++) {
          const ds = upstream * ((c === decision.chosen ? 1 : 0) - Math.exp(s[c]! - logZ));
          const xo = c * F;
          const ho = c * H;
          for (let i = 0; i < F; i++) grad.skipWeights[i] = grad.skipWeights[i]! + ds * x[xo + i]!;
          for (let j = 0; j < H; j++) {
            const t = h[ho + j]!;
            grad.outputWeights[j] = grad.outputWeights[j]! + ds * t;
            const dz = ds * out[j]! * (1 - t * t);
            grad.hiddenBias[j] = grad.hiddenBias[j]! + dz;
            h[ho + j] = dz; // reused: the hidden activation is no longer needed, its pre-activation gradient is
          }
          for (let i = 0; i < F; i++) {
            const xi = x[xo + i]!;
            if (xi === 0) continue;
            const wo = i * H;
            for (let j = 0; j < H; j++) grad.hiddenWeights[wo + j] = grad.hiddenWeights[wo + j]! + h[ho + j]! * xi;
          }
        }
      }
    }
    let norm = 0;
    for (const key of KEYS) for (const g of grad[key]) norm += g * g;
    const step = adam.step + 1;
    const stepSize = options.learningRate / (1 - options.beta1 ** step);
    const secondCorrection = 1 - options.beta2 ** step;
    const tensors = {} as Record<ParamKey, Float32Array>;
    const m = {} as Record<ParamKey, Float32Array>;
    const v = {} as Record<ParamKey, Float32Array>;
    for (const key of KEYS) {
      const g = grad[key];
      const p = params.tensors[key];
      const m0 = adam.m[key];
      const v0 = adam.v[key];
      const p1 = new Float32Array(p.length);
      const m1 = new Float32Array(p.length);
      const v1 = new Float32Array(p.length);
      for (let i = 0; i < p.length; i++) {
        const gi = g[i]!;
        const mi = options.beta1 * m0[i]! + (1 - options.beta1) * gi;
        const vi = options.beta2 * v0[i]! + (1 - options.beta2) * gi * gi;
        m1[i] = mi;
        v1[i] = vi;
        p1[i] = p[i]! + (stepSize * mi) / (Math.sqrt(vi / secondCorrection) + options.epsilon);
      }
      tensors[key] = p1;
      m[key] = m1;
      v[key] = v1;
    }
    return { tensors, adam: { step, m, v }, gradNorm: Math.sqrt(norm) };
  }
}
