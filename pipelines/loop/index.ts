export { runLoop, type LoopProgress } from './loop.js';
export { resolveLoop, type LoopOptions, type ResolvedLoop } from './options.js';
export { summarizeLoop, type LoopSummary, type PolicyVersionRow, type StageThroughput } from './summary.js';
export { committedPastInputs, type ExternalLearner } from './external-learner.js';
