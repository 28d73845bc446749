export { groupAdvantages, type GroupStats } from './advantages.js';
export { createRewardProcessor } from './reward.js';
