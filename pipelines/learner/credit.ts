/**
 * The advantage reward 0 had in a reward's group, from the reward's own: advantages are (r - mean) / (std + eps),
 * so a failure's is the reward's scaled by (0 - mean) / (r - mean). A reward equal to its group's mean has no signal.
 */
export function failureAdvantage(reward: { readonly reward: number; readonly advantage: number; readonly groupMean: number }): number {
  if (reward.reward === 0) return reward.advantage;
  if (reward.reward === reward.groupMean) return 0;
  return (reward.advantage * (0 - reward.groupMean)) / (reward.reward - reward.groupMean);
}
