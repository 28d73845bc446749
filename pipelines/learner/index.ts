export { createLearner, type LearnerOptions } from './learner.js';
