export { evaluatePolicy, landEvaluation, type EvaluatedEpisode, type Evaluation, type EvaluateOptions, type LandOptions } from './evaluate.js';
