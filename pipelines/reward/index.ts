export { failureAdvantage, groupAdvantages, type GroupStats } from './advantages.js';
export {
  groupKey,
  lateReward,
  memberOf,
  resolveGroupScoring,
  rewardOf,
  scoreGroup,
  type ClosedGroup,
  type GroupClosure,
  type GroupMember,
  type GroupScoringOptions,
  type ResolvedGroupScoring,
} from './groups.js';
export { createRewardProcessor, resolveRewardOptions, type RewardOptions, type RewardProcessorOptions } from './reward.js';
