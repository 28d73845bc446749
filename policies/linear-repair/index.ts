export { editFeatures, FEATURE_NAMES } from './features.js';
export { linearRepairKind } from './kind.js';
export { LINEAR_REPAIR_POLICY, LinearRepairPolicy } from './policy.js';
export { chooseIndex, greedyIndex, logSoftmax, sampleIndex } from './softmax.js';
export { adamStep, freshAdam, surrogateGradient, surrogateObjective, type AdamState } from './update.js';
export type { PolicySample, UpdateOptions } from '../types.js';
