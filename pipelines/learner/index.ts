export { createLearner } from './learner.js';
export { LEARNER_DEFAULTS, resolveLearner, type LearnerOptions, type LearnerSettings, type ResolvedLearner } from './options.js';
