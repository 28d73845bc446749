import type ort from 'onnxruntime-node';
import { ValidationError } from '../../schemas/index.js';
import { decisionAdvantage, type PolicySample } from '../types.js';
import { GRAPH, PARAM_NAMES, updateModel, type ParamName } from './graphs.js';
import { checkParams, freshAdamState, paramShape, type OnnxAdamState, type OnnxParams, type ParamTensors } from './params.js';
import { openSession, packCandidates, resolveRuntimeOptions, scalar, tensor, type OnnxRuntimeOptions } from './runtime.js';
import { resolveUpdateOptions, type OnnxUpdateOptions, type ResolvedUpdateOptions } from './update-options.js';

/** What one update reports (the last epoch's values when there are several). */
export interface OnnxUpdateMetrics {
  /** Samples in the batch (trajectories), counting those without a learned choice. */
  readonly samples: number;
  /** Learned choices trained on. */
  readonly decisions: number;
  readonly epochs: number;
  /** The negated clipped surrogate objective before the step. */
  readonly loss: number;
  readonly gradNorm: number;
  /** Share of decisions whose gradient the clip removed. */
  readonly clipFraction: number;
  /** KL(behaviour || current) estimate over the decisions, before the step. */
  readonly approxKl: number;
  /** Mean entropy of the candidate distributions, before the step. */
  readonly entropy: number;
}

export interface OnnxUpdate {
  readonly params: OnnxParams;
  readonly adamState: OnnxAdamState;
  readonly metrics: OnnxUpdateMetrics;
}

/** A batch in the update model's layout. */
interface PackedBatch {
  readonly sampleCount: number;
  readonly feeds: Record<string, ort.Tensor>;
}

/**
 * Takes PPO steps on the parameters through onnxruntime: the update model holds the forward pass, the
 * clipped surrogate, its analytic gradient and Adam, so the same code runs on whichever execution
 * provider the options name. Parameters go in and come out as plain tensors; the trainer keeps none.
 */
export class OnnxTrainer {
  private constructor(private readonly session: ort.InferenceSession) {}

  static async create(options: OnnxRuntimeOptions = {}): Promise<OnnxTrainer> {
    return new OnnxTrainer(await openSession(updateModel(), resolveRuntimeOptions(options), 'onnx-repair update'));
  }

  /**
   * `epochs` Adam ascent steps on the batch's clipped surrogate objective. Samples carry the
   * log-probability their behaviour policy gave each choice and their (staleness-weighted) group
   * advantage. A batch without a single learned choice leaves parameters and optimizer as they were.
   */
  async update(params: OnnxParams, adamState: OnnxAdamState, samples: readonly PolicySample[], options: OnnxUpdateOptions = {}): Promise<OnnxUpdate> {
    const resolved = resolveUpdateOptions(options);
    checkState(params, adamState);
    const batch = packBatch(params, samples);
    if (!batch) {
      const metrics = { samples: samples.length, decisions: 0, epochs: 0, loss: 0, gradNorm: 0, clipFraction: 0, approxKl: 0, entropy: 0 };
      return { params, adamState, metrics };
    }
    let current = { params, adamState };
    let last: Record<string, ort.Tensor> = {};
    for (let epoch = 0; epoch < resolved.epochs; epoch++) {
      last = await this.session.run(stepFeeds(batch, current.params, current.adamState, resolved));
      const next = (name: (param: ParamName) => string): ParamTensors => readTensors(last, name);
      current = {
        params: { ...current.params, tensors: next(GRAPH.nextParam) },
        adamState: { step: current.adamState.step + 1, m: next(GRAPH.nextAdamM), v: next(GRAPH.nextAdamV) },
      };
    }
    const metric = (name: string): number => Number(last[name]!.data[0]);
    return {
      ...current,
      metrics: {
        samples: samples.length,
        decisions: batch.feeds[GRAPH.oldLogProbs]!.dims[0]!,
        epochs: resolved.epochs,
        loss: metric(GRAPH.loss),
        gradNorm: metric(GRAPH.gradNorm),
        clipFraction: metric(GRAPH.clipFraction),
        approxKl: metric(GRAPH.approxKl),
        entropy: metric(GRAPH.entropy),
      },
    };
  }

  /** The gradient of the clipped surrogate objective (ascent direction) and the loss, as the update model computes them. */
  async gradient(params: OnnxParams, samples: readonly PolicySample[], clip = resolveUpdateOptions().clip): Promise<{ gradient: ParamTensors; loss: number }> {
    checkParams(params, 'OnnxTrainer.gradient params');
    const batch = packBatch(params, samples);
    if (!batch) throw new ValidationError('OnnxTrainer.gradient samples', ['hold no learned choice']);
    const outputs = await this.session.run(stepFeeds(batch, params, freshAdamState(params), resolveUpdateOptions({ clip })), [
      GRAPH.loss,
      ...PARAM_NAMES.map(GRAPH.gradient),
    ]);
    return { gradient: readTensors(outputs, GRAPH.gradient), loss: Number(outputs[GRAPH.loss]!.data[0]) };
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}

function checkState(params: OnnxParams, adamState: OnnxAdamState): void {
  checkParams(params, 'OnnxTrainer.update params');
  checkParams({ ...params, tensors: adamState.m }, 'OnnxTrainer.update adamState.m');
  checkParams({ ...params, tensors: adamState.v }, 'OnnxTrainer.update adamState.v');
  if (!Number.isInteger(adamState.step) || adamState.step < 0) throw new ValidationError('OnnxTrainer.update adamState', [`step must be a whole number >= 0, got ${adamState.step}`]);
}

/** Lays the batch out for the model after checking every decision; null when there is nothing to learn from. */
function packBatch(params: OnnxParams, samples: readonly PolicySample[]): PackedBatch | null {
  const featureCount = params.featureNames.length;
  const issues: string[] = [];
  const candidates: (readonly (readonly number[])[])[] = [];
  const chosen: number[] = [];
  const oldLogProbs: number[] = [];
  const advantages: number[] = [];
  samples.forEach((sample, s) => {
    sample.decisions.forEach((decision, d) => {
      const where = `sample ${s} decision ${d}`;
      const advantage = decisionAdvantage(sample, d);
      if (!Number.isFinite(advantage)) issues.push(`${where}: advantage ${advantage} (staleness weight ${sample.weight} applied) is not finite`);
      if (decision.features.length === 0) issues.push(`${where}: no candidates`);
      const bad = decision.features.findIndex((row) => row.length !== featureCount || !row.every(Number.isFinite));
      if (bad >= 0) issues.push(`${where}: candidate ${bad} needs ${featureCount} finite features, has ${decision.features[bad]!.length}`);
      if (!Number.isInteger(decision.chosen) || decision.chosen < 0 || decision.chosen >= decision.features.length) issues.push(`${where}: chosen ${decision.chosen} is not one of its ${decision.features.length} candidates`);
      if (!Number.isFinite(decision.logprob) || decision.logprob > 1e-6) issues.push(`${where}: logprob ${decision.logprob} is not a log-probability`);
      candidates.push(decision.features);
      chosen.push(decision.chosen);
      oldLogProbs.push(decision.logprob);
      advantages.push(advantage);
    });
  });
  if (issues.length) throw new ValidationError('OnnxTrainer batch', issues.slice(0, 10).concat(issues.length > 10 ? [`and ${issues.length - 10} more`] : []));
  if (candidates.length === 0) return null;
  const packed = packCandidates(candidates, featureCount);
  const oneHot = new Float32Array(packed.decisions * packed.candidates);
  chosen.forEach((c, b) => (oneHot[b * packed.candidates + c] = 1));
  const grid = [packed.decisions, packed.candidates];
  return {
    sampleCount: samples.length,
    feeds: {
      [GRAPH.features]: tensor(packed.features, [...grid, featureCount]),
      [GRAPH.mask]: tensor(packed.mask, grid),
      [GRAPH.chosen]: tensor(oneHot, grid),
      [GRAPH.oldLogProbs]: tensor(Float32Array.from(oldLogProbs), [packed.decisions]),
      [GRAPH.advantages]: tensor(Float32Array.from(advantages), [packed.decisions]),
    },
  };
}

function stepFeeds(batch: PackedBatch, params: OnnxParams, adam: OnnxAdamState, options: ResolvedUpdateOptions): Record<string, ort.Tensor> {
  const feeds: Record<string, ort.Tensor> = {
    ...batch.feeds,
    ...paramFeeds(params),
    [GRAPH.sampleCount]: scalar(batch.sampleCount),
    [GRAPH.step]: scalar(adam.step + 1),
    [GRAPH.learningRate]: scalar(options.learningRate),
    [GRAPH.clip]: scalar(options.clip),
    [GRAPH.beta1]: scalar(options.beta1),
    [GRAPH.beta2]: scalar(options.beta2),
    [GRAPH.epsilon]: scalar(options.epsilon),
  };
  for (const name of PARAM_NAMES) {
    const dims = paramDims(params, name);
    feeds[GRAPH.adamM(name)] = tensor(adam.m[name], dims);
    feeds[GRAPH.adamV(name)] = tensor(adam.v[name], dims);
  }
  return feeds;
}

export function paramFeeds(params: OnnxParams): Record<string, ort.Tensor> {
  return Object.fromEntries(PARAM_NAMES.map((name) => [name, tensor(params.tensors[name], paramDims(params, name))]));
}

const paramDims = (params: OnnxParams, name: ParamName): number[] => paramShape(name, params.featureNames.length, params.hiddenSize);

function readTensors(outputs: Record<string, ort.Tensor>, name: (param: ParamName) => string): ParamTensors {
  return Object.fromEntries(PARAM_NAMES.map((param) => [param, Float32Array.from(outputs[name(param)]!.data as Float32Array)])) as Record<ParamName, Float32Array>;
}
