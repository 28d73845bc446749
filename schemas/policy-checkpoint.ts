import { z } from 'zod';
import { Lineage } from './lineage.js';

export const TrainingMetrics = z.object({
  samples: z.number().int().min(0),
  meanReward: z.number(),
  meanAbsAdvantage: z.number().min(0),
  gradNorm: z.number().min(0),
  /** Samples dropped because their policy version lagged the learner too far. */
  staleDropped: z.number().int().min(0),
  /** Learner-specific figures (an LLM learner's loss, KL, clip fraction, tokens); empty for the built-in learners. */
  extra: z.record(z.string(), z.number()).default({}),
});
export type TrainingMetrics = z.infer<typeof TrainingMetrics>;

/** Where the checkpoint's bytes are kept (a checkpoint store: a local folder, or an object store). */
export const CheckpointArtifact = z.object({
  uri: z.string().min(1),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  bytes: z.number().int().min(0),
  /**
   * What the bytes are, so a reader refuses an artifact it cannot load instead of misreading it: null for the
   * built-in policies (their kind is the policy's), `lora-safetensors/v1` for an LLM's LoRA adapter (llm-learner/).
   */
  format: z.string().min(1).nullable().default(null),
});
export type CheckpointArtifact = z.infer<typeof CheckpointArtifact>;

/** Published on a compacted topic keyed by policy id, so the newest version is always readable. */
export const PolicyCheckpoint = z.object({
  policyId: z.string().min(1),
  version: z.number().int().min(0),
  parentVersion: z.number().int().min(0).nullable(),
  featureNames: z.array(z.string()),
  /** Inline weights for small linear policies (shown in analytics); empty when only the artifact holds them. */
  weights: z.array(z.number()),
  /** sha256 of the policy's serialised parameters (the artifact's bytes when there is one). */
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  /** The serialised parameters in the checkpoint store; null for checkpoints written before stores existed. */
  artifact: CheckpointArtifact.nullable().default(null),
  metrics: TrainingMetrics,
  lineage: Lineage,
});
export type PolicyCheckpoint = z.infer<typeof PolicyCheckpoint>;

/**
 * Pins the version rollout workers must use (a rollback), or clears the pin (null). Compacted, keyed by
 * policy id; the pinned checkpoint travels whole, since compaction drops old checkpoint records.
 */
export const PolicyPin = z.object({
  policyId: z.string().min(1),
  checkpoint: PolicyCheckpoint.nullable(),
  reason: z.string(),
  createdAt: z.iso.datetime(),
});
export type PolicyPin = z.infer<typeof PolicyPin>;
