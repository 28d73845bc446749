export { runEpisode, type EpisodeResult } from './episode.js';
export { PolicyTracker } from './policy-tracker.js';
export { createRolloutWorker, createRolloutWorkerLanes, llmTaskTimeoutMs, type PolicySource, type RolloutLanesOptions, type RolloutWorkerOptions } from './worker.js';
