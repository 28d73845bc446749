export { candidateFeatures, ONNX_REPAIR_FEATURE_NAMES } from './features.js';
export { OnnxRepairPolicy, OnnxScorer } from './policy.js';
export {
  averageParams,
  featureMismatch,
  freshAdamState,
  initialParams,
  ONNX_REPAIR_POLICY,
  paramsSha256,
  parseAdamState,
  parseParams,
  serializeAdamState,
  serializeParams,
  type InitialParamsOptions,
  type OnnxAdamState,
  type OnnxParams,
  type ParamTensors,
} from './params.js';
export { referenceGradient, referenceLogProbs, referenceObjective, referenceUpdate } from './reference.js';
export { knownExecutionProviders, type OnnxRuntimeOptions } from './runtime.js';
export { OnnxTrainer, type OnnxUpdate, type OnnxUpdateMetrics } from './trainer.js';
export { resolveUpdateOptions, type OnnxUpdateOptions } from './update-options.js';
export { createOnnxRepairKind, onnxRepairKind, type OnnxRepairKindOptions } from './kind.js';
