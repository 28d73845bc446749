export { createWeightSync, resolveWeightSyncOptions, verifiedAdapter, type ResolvedWeightSyncOptions, type WeightSyncOptions } from './sync.js';
