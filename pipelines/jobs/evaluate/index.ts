export { evaluatePolicy, evaluationVerifier, foreignWeights, landEvaluation, type EvaluatedEpisode, type Evaluation, type TaskEvaluation, type EvaluateOptions, type LandOptions } from './evaluate.js';
export { compareRates, differenceInterval, effectiveEpisodes, wilsonInterval, Z95, type Interval, type RateComparison, type RateSample, type RateSide, type Tally } from './stats.js';
