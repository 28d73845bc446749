export { runEpisode, type EpisodeResult } from './episode.js';
export { PolicyTracker } from './policy-tracker.js';
export { createRolloutWorker, type RolloutWorkerOptions } from './worker.js';
