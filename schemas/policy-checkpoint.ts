import { z } from 'zod';
import { Lineage } from './lineage.js';

export const TrainingMetrics = z.object({
  samples: z.number().int().min(0),
  meanReward: z.number(),
  meanAbsAdvantage: z.number().min(0),
  gradNorm: z.number().min(0),
  /** Samples dropped because their policy version lagged the learner too far. */
  staleDropped: z.number().int().min(0),
});
export type TrainingMetrics = z.infer<typeof TrainingMetrics>;

/** Published on a compacted topic keyed by policy id, so the newest version is always readable. */
export const PolicyCheckpoint = z.object({
  policyId: z.string().min(1),
  version: z.number().int().min(0),
  parentVersion: z.number().int().min(0).nullable(),
  featureNames: z.array(z.string()),
  weights: z.array(z.number()),
  /** sha256 over the canonical JSON of {policyId, version, featureNames, weights}. */
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  metrics: TrainingMetrics,
  lineage: Lineage,
});
export type PolicyCheckpoint = z.infer<typeof PolicyCheckpoint>;
