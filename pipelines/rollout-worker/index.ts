export { runEpisode, type EpisodeResult } from './episode.js';
export { PolicyTracker } from './policy-tracker.js';
export { llmTaskTimeoutMs, resolveRolloutWorker, ROLLOUT_WORKER_DEFAULTS, type PolicySource, type ResolvedRolloutWorker, type RolloutLanesOptions, type RolloutWorkerOptions, type RolloutWorkerSettings } from './options.js';
export { createRolloutWorker, createRolloutWorkerLanes } from './worker.js';
