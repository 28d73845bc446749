export { runEpisode, type EpisodeResult } from './episode.js';
export { PolicyTracker } from './policy-tracker.js';
export { createRolloutWorker, llmTaskTimeoutMs, type PolicySource, type RolloutWorkerOptions } from './worker.js';
