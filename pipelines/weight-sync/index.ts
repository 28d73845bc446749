export { createWeightSync, resolveWeightSyncOptions, serveBaseModel, verifiedAdapter, type ResolvedWeightSyncOptions, type WeightSyncOptions } from './sync.js';
