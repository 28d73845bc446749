export { evaluatePolicy, type Evaluation, type EvaluateOptions } from './evaluate.js';
export { runLoop, type LoopOptions, type LoopProgress, type LoopSummary, type PolicyVersionRow } from './loop.js';
