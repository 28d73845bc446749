import { z } from 'zod';
import { Lineage } from './lineage.js';

export const Reward = z.object({
  rewardId: z.string().min(1),
  trajectoryId: z.string().min(1),
  verificationId: z.string().min(1),
  groupId: z.string().min(1),
  reward: z.number(),
  /** Group-relative advantage: (reward - group mean) / (group std + epsilon). */
  advantage: z.number(),
  groupMean: z.number(),
  groupStd: z.number().min(0),
  groupSize: z.number().int().min(1),
  lineage: Lineage,
});
export type Reward = z.infer<typeof Reward>;
