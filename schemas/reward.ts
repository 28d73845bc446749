import { z } from 'zod';
import { Lineage } from './lineage.js';

/**
 * What happens to a reward: `learn` goes to the learner; `no-signal` (every reward in the group equal,
 * so every advantage is 0: dynamic sampling drops it), `withheld` (quarantined task, or too few members
 * at the straggler deadline) and `late` (arrived after its group was scored) do not.
 */
export const RewardDisposition = z.enum(['learn', 'no-signal', 'withheld', 'late']);
export type RewardDisposition = z.infer<typeof RewardDisposition>;

export const Reward = z.object({
  rewardId: z.string().min(1),
  trajectoryId: z.string().min(1),
  verificationId: z.string().min(1),
  groupId: z.string().min(1),
  /**
   * The verification's score under the task's RewardSpec, in [0, 1] (binary or partial credit, less its turn
   * penalty; 1 for a pass in records without a score), 0 whenever a hack was flagged.
   */
  reward: z.number(),
  /** Group-relative advantage: (reward - group mean) / (group std + epsilon); 0 unless `disposition` is `learn`. */
  advantage: z.number(),
  groupMean: z.number(),
  groupStd: z.number().min(0),
  /** Members the group was scored with. */
  groupSize: z.number().int().min(1),
  // The fields below are optional so records written before they existed stay valid; the reward
  // stage always sets them, and readers treat absent as: null, false, 'learn', null, null.
  /** Fraction of expected hidden tests that passed, beside the all-or-nothing reward. */
  fractionPassed: z.number().min(0).max(1).nullable().optional(),
  /** True when the verification carried hack flags. */
  hacked: z.boolean().optional(),
  disposition: RewardDisposition.optional(),
  /** Why the reward is not `learn`, or how its group was closed; null for a complete group with signal. */
  reason: z.string().nullable().optional(),
  /** Set on rewards written by `trialrun verify rescore`; they are for comparison, never for training. */
  rescoreId: z.string().nullable().optional(),
  lineage: Lineage,
});
export type Reward = z.infer<typeof Reward>;
