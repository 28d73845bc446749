export { evaluatePolicy, evaluationVerifier, foreignWeights, landEvaluation, type EvaluatedEpisode, type Evaluation, type EvaluateOptions, type LandOptions } from './evaluate.js';
export { compareRates, differenceInterval, wilsonInterval, Z95, type Interval, type RateComparison } from './stats.js';
