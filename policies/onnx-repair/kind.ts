import { PROGRAM_REPAIR_ENV, type RepairObservation } from '../../envs/index.js';
import type { PolicyKind } from '../types.js';
import { ONNX_REPAIR_FEATURE_NAMES } from './features.js';
import { averageParams, freshAdamState, initialParams, ONNX_REPAIR_POLICY, parseAdamState, parseParams, serializeAdamState, serializeParams, type InitialParamsOptions, type OnnxAdamState, type OnnxParams } from './params.js';
import { OnnxRepairPolicy, OnnxScorer } from './policy.js';
import { resolveRuntimeOptions, type OnnxRuntimeOptions } from './runtime.js';
import { OnnxTrainer } from './trainer.js';

export interface OnnxRepairKindOptions extends OnnxRuntimeOptions, InitialParamsOptions {
  /** Seed of version 0's hidden weights (its scores are uniform whatever the seed). @default 'onnx-repair/v0' */
  seed?: string;
}

/**
 * The ONNX MLP edit chooser as a policy kind. Its scoring and update sessions open on first use and are
 * shared by every version loaded or trained in this process.
 */
export function createOnnxRepairKind(options: OnnxRepairKindOptions = {}): PolicyKind<RepairObservation, OnnxParams, OnnxAdamState> {
  // Bad options fail here, not at the first episode or batch.
  const runtime = resolveRuntimeOptions(options);
  const versionZero = (): OnnxParams => initialParams(options.seed ?? `${ONNX_REPAIR_POLICY}/v0`, options);
  versionZero();
  let scorer: Promise<OnnxScorer> | undefined;
  let trainer: Promise<OnnxTrainer> | undefined;
  return {
    policyId: ONNX_REPAIR_POLICY,
    serves: [PROGRAM_REPAIR_ENV],
    featureNames: ONNX_REPAIR_FEATURE_NAMES,
    // The repair script chooses again only after the previous edit failed the visible tests and was reverted.
    earlierDecisionsFailed: true,
    initial: () => {
      const params = versionZero();
      return { params, optimizer: freshAdamState(params) };
    },
    encodeParams: serializeParams,
    decodeParams: (bytes) => parseParams(bytes),
    encodeOptimizer: serializeAdamState,
    decodeOptimizer: parseAdamState,
    // The weights live in the artifact only: a few thousand floats are no analytics column.
    inlineWeights: () => [],
    average: averageParams,
    load: async (params, version, loadOptions) => new OnnxRepairPolicy(version, params, await (scorer ??= OnnxScorer.create(runtime)), loadOptions?.decoding),
    update: async (params, optimizer, samples, updateOptions) => {
      const step = await (await (trainer ??= OnnxTrainer.create(runtime))).update(params, optimizer, samples, updateOptions);
      return { params: step.params, optimizer: step.adamState, gradNorm: step.metrics.gradNorm };
    },
  };
}

/** The kind with default options (CPU, 32 hidden units). */
export const onnxRepairKind = createOnnxRepairKind();
