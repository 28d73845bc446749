export { editFeatures, FEATURE_NAMES } from './features.js';
export { checkpointDigest, LINEAR_REPAIR_POLICY, LinearRepairPolicy } from './policy.js';
export { logSoftmax, sampleIndex } from './softmax.js';
export { adamStep, freshAdam, surrogateGradient, surrogateObjective, type AdamState, type PolicySample, type UpdateOptions } from './update.js';
