import { nowIso, type Verification } from '../../schemas/index.js';
import { StateStore, StreamProcessor, type Output, type ProcessorContext } from '../runtime/index.js';
import { groupAdvantages } from './advantages.js';

/**
 * Collects the G verifications of each group (kept in a changelog-backed store, so a restart loses no
 * partial group) and, once the group is complete, publishes one reward per trajectory with its
 * group-relative advantage.
 */
export function createRewardProcessor(context: ProcessorContext): StreamProcessor<'verifications'> {
  const groups = new StateStore<Verification[]>('groups', context.names.changelog('reward', 'groups'));
  return new StreamProcessor(
    context,
    { name: 'reward', inputs: ['verifications'], stores: [groups as StateStore<unknown>], maxRecordsPerTransaction: 50 },
    async ({ record }) => {
      const verification = record.value;
      const members = (groups.get(verification.groupId) ?? []).filter((v) => v.trajectoryId !== verification.trajectoryId);
      members.push(verification);
      if (members.length < verification.groupSize) {
        groups.put(verification.groupId, members);
        return [];
      }
      groups.delete(verification.groupId);
      members.sort((a, b) => a.lineage.attempt - b.lineage.attempt);
      const rewards = members.map((v) => (v.passed ? 1 : 0));
      const stats = groupAdvantages(rewards);
      return members.map(
        (v, i): Output => ({
          topic: 'rewards',
          key: v.trajectoryId,
          value: {
            rewardId: `${v.verificationId}/reward`,
            trajectoryId: v.trajectoryId,
            verificationId: v.verificationId,
            groupId: v.groupId,
            reward: rewards[i]!,
            advantage: stats.advantages[i]!,
            groupMean: stats.mean,
            groupStd: stats.std,
            groupSize: members.length,
            lineage: { ...v.lineage, createdAt: nowIso() },
          },
        }),
      );
    },
  );
}
