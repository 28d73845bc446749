export { evaluatePolicy, landEvaluation, type EvaluatedEpisode, type Evaluation, type EvaluateOptions, type LandOptions } from './evaluate.js';
export { runLoop, type LoopOptions, type LoopProgress, type LoopSummary, type PolicyVersionRow } from './loop.js';
