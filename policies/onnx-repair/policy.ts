import type ort from 'onnxruntime-node';
import type { RepairObservation } from '../../envs/index.js';
import { ValidationError } from '../../schemas/index.js';
import { chooseIndex } from '../linear-repair/index.js';
import { applyEdit, repairMove } from '../repair-script.js';
import type { Action, Decoding, Policy } from '../types.js';
import { candidateFeatures, ONNX_REPAIR_FEATURE_NAMES } from './features.js';
import { GRAPH, scoringModel } from './graphs.js';
import { checkParams, featureMismatch, ONNX_REPAIR_POLICY, type OnnxParams } from './params.js';
import { openSession, packCandidates, resolveRuntimeOptions, tensor, type OnnxRuntimeOptions } from './runtime.js';
import { paramFeeds } from './trainer.js';

/**
 * The scoring model in one onnxruntime session. Parameters are inputs, so a rollout worker opens one
 * scorer and every policy version it loads shares it.
 */
export class OnnxScorer {
  private constructor(private readonly session: ort.InferenceSession) {}

  static async create(options: OnnxRuntimeOptions = {}): Promise<OnnxScorer> {
    return new OnnxScorer(await openSession(scoringModel(), resolveRuntimeOptions(options), 'onnx-repair scoring'));
  }

  /** Log-probabilities over each decision's candidates (one feature vector per candidate). */
  async logProbs(params: OnnxParams, decisions: readonly (readonly (readonly number[])[])[]): Promise<number[][]> {
    const featureCount = params.featureNames.length;
    const packed = packCandidates(decisions, featureCount);
    const grid = [packed.decisions, packed.candidates];
    const outputs = await this.session.run({ ...paramFeeds(params), [GRAPH.features]: tensor(packed.features, [...grid, featureCount]), [GRAPH.mask]: tensor(packed.mask, grid) });
    const flat = outputs[GRAPH.logProbs]!.data as Float32Array;
    return decisions.map((rows, b) => Array.from(flat.subarray(b * packed.candidates, b * packed.candidates + rows.length)));
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}

/**
 * The scripted repair loop with its one learned choice, which edit to try next, made by the MLP: each
 * untried edit is scored from its features (edit kind, where it sits relative to the failing lines and
 * functions, how the tests failed, what the episode already tried) and one is sampled from the softmax (or the
 * most probable one taken, when decoding greedily).
 */
export class OnnxRepairPolicy implements Policy<RepairObservation> {
  readonly policyId = ONNX_REPAIR_POLICY;

  constructor(
    readonly version: number,
    readonly params: OnnxParams,
    private readonly scorer: OnnxScorer,
    private readonly decoding: Decoding = 'sample',
  ) {
    const mismatch = featureMismatch(params.featureNames, ONNX_REPAIR_FEATURE_NAMES);
    if (mismatch) throw new ValidationError(`onnx-repair parameters of version ${version}`, [`were trained on other features than this build computes: ${mismatch}`]);
    checkParams(params, `onnx-repair parameters of version ${version}`);
  }

  async act(observation: RepairObservation, random: () => number, signal?: AbortSignal): Promise<Action> {
    const move = repairMove(observation);
    if (move.kind === 'scripted') return move.action;
    signal?.throwIfAborted();
    const features = candidateFeatures(move.candidates, observation);
    const [logProbs] = await this.scorer.logProbs(this.params, [features]);
    const chosen = chooseIndex(logProbs!, random, this.decoding);
    return applyEdit(move.candidates[chosen]!, { features, chosen, logprob: logProbs![chosen]! });
  }
}
