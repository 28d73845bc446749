export { runLoop, type LoopOptions, type LoopProgress, type LoopSummary, type PolicyVersionRow } from './loop.js';
export { committedPastInputs, type ExternalLearner } from './external-learner.js';
