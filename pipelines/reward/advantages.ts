export interface GroupStats {
  readonly mean: number;
  readonly std: number;
  readonly advantages: number[];
}

/**
 * GRPO's group-relative advantage: (r - mean) / (std + epsilon) over the G samples of one task under
 * one policy version. A group whose rewards are all equal carries no signal: every advantage is 0.
 */
export function groupAdvantages(rewards: readonly number[], epsilon = 1e-6): GroupStats {
  if (rewards.length === 0) throw new Error('groupAdvantages needs at least one reward');
  const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
  const std = Math.sqrt(rewards.reduce((sum, r) => sum + (r - mean) ** 2, 0) / rewards.length);
  return { mean, std, advantages: rewards.map((r) => (r - mean) / (std + epsilon)) };
}

/**
 * The advantage reward 0 had in a reward's group, from the reward's own: advantages are (r - mean) / (std + eps),
 * so a failure's is the reward's scaled by (0 - mean) / (r - mean). A reward equal to its group's mean has no signal.
 */
export function failureAdvantage(reward: { readonly reward: number; readonly advantage: number; readonly groupMean: number }): number {
  if (reward.reward === 0) return reward.advantage;
  if (reward.reward === reward.groupMean) return 0;
  return (reward.advantage * (0 - reward.groupMean)) / (reward.reward - reward.groupMean);
}
