import { wholeNumber } from '../../schemas/index.js';
import { StateStore, StreamProcessor, type Accept, type MembershipOptions, type Output, type ProcessorContext } from '../runtime/index.js';
import { groupKey, lateReward, memberOf, resolveGroupScoring, scoreGroup, type ClosedGroup, type GroupClosure, type GroupMember, type GroupScoringOptions } from './groups.js';

export interface RewardOptions extends GroupScoringOptions {
  /**
   * How long a group waits for stragglers after its first member, in stream time: the newest broker
   * timestamp seen on the group's partition, so a replay closes groups exactly as the live run did. Then
   * it is scored with the members it has if they are at least `minGroupSize`, else withheld. The deadline
   * passes when a later verification arrives on that partition. @default 600000
   */
  stragglerDeadlineMs?: number;
  /** How long a scored group is remembered (stream time), to tell a late member from a duplicate. @default 86400000 */
  closedRetentionMs?: number;
}

interface OpenGroup {
  /** Broker timestamp of the group's first member. */
  readonly openedAt: number;
  /** A group's members share a key (its id), so they share one partition, and that partition's clock. */
  readonly partition: number;
  readonly members: GroupMember[];
}

interface ClosedEntry extends ClosedGroup {
  readonly partition: number;
}

const streamTimeKey = (partition: number): string => `stream-time/${partition}`;
const sweepKey = (partition: number): string => `last-retention-sweep/${partition}`;

export function resolveRewardOptions(options: RewardOptions = {}): Readonly<Required<RewardOptions>> {
  const scoring = resolveGroupScoring(options);
  const resolved = { stragglerDeadlineMs: 600_000, closedRetentionMs: 86_400_000, ...options, ...scoring };
  wholeNumber('RewardOptions.stragglerDeadlineMs', resolved.stragglerDeadlineMs, { min: 1, unit: 'ms' });
  // The bound is the deadline's value: a scored group is remembered at least as long as its stragglers are awaited.
  wholeNumber('RewardOptions.closedRetentionMs', resolved.closedRetentionMs, { min: resolved.stragglerDeadlineMs, unit: 'ms' });
  return resolved;
}

/**
 * Collects the verifications of each (group, verifier version) in changelog-backed stores, so a
 * restart loses no partial group, and scores the group once all G are in, or at its straggler deadline.
 * Every trajectory gets exactly one reward record; those without learning signal (no-signal, withheld,
 * late) say so in `disposition` and the learner skips them. Verifications written by a re-scoring run
 * are rewarded by that run, not here.
 */
export interface RewardProcessorOptions extends RewardOptions, MembershipOptions {
  /** Which verifications this processor scores; the others are committed past. @default all */
  accept?: Accept<'verifications'>;
  /** This instance's name (ProcessorOptions.instanceId): one is active, the others stand by. @default '0' */
  instanceId?: string;
}

export function createRewardProcessor(context: ProcessorContext, options: RewardProcessorOptions = {}): StreamProcessor<'verifications'> {
  const settings = resolveRewardOptions(options);
  const groups = new StateStore<OpenGroup>('groups', context.names.changelog('reward', 'groups'));
  const closed = new StateStore<ClosedEntry>('closed', context.names.changelog('reward', 'closed'));
  const clock = new StateStore<number>('clock', context.names.changelog('reward', 'clock'));

  const close = (key: string, group: OpenGroup, closure: GroupClosure, now: number): Output[] => {
    const rewards = scoreGroup(group.members, closure, settings);
    groups.delete(key);
    closed.put(key, { closedAt: now, partition: group.partition, trajectoryIds: group.members.map((m) => m.trajectoryId), mean: rewards[0]?.groupMean ?? 0, std: rewards[0]?.groupStd ?? 0 });
    return rewards.map((value): Output => ({ topic: 'rewards', key: value.trajectoryId, value }));
  };

  return new StreamProcessor(
    context,
    { name: 'reward', inputs: ['verifications'], stores: [groups, closed, clock] as StateStore<unknown>[], maxRecordsPerTransaction: 50, accept: options.accept, sessionTimeoutMs: options.sessionTimeoutMs, instanceId: options.instanceId },
    async ({ record }) => {
      const verification = record.value;
      if ((verification.rescoreId ?? null) !== null) return [];
      // Stream time per partition: the newest broker timestamp seen there. Order within a partition is
      // fixed, so a replay closes every group exactly as the live run did.
      const { partition } = record;
      const timestamp = Number(record.timestamp) || 0;
      const now = Math.max(clock.get(streamTimeKey(partition)) ?? 0, timestamp);
      clock.put(streamTimeKey(partition), now);
      const outputs: Output[] = [];

      // First the groups whose stragglers are past due by the partition's stream time (this record's timestamp
      // if it is the newest), so a member arriving after its group's deadline finds the group scored.
      for (const [key, group] of groups.entries()) {
        if (group.partition === partition && now - group.openedAt >= settings.stragglerDeadlineMs) {
          outputs.push(...close(key, group, { by: 'deadline', expected: group.members[0]?.groupSize ?? group.members.length }, now));
        }
      }

      const member = memberOf(verification);
      const key = groupKey(member);
      const done = closed.get(key);
      if (done !== undefined) {
        // A redelivered member of a scored group is a duplicate; a new one is late.
        if (!done.trajectoryIds.includes(member.trajectoryId)) {
          outputs.push({ topic: 'rewards', key: member.trajectoryId, value: lateReward(member, done) });
          closed.put(key, { ...done, trajectoryIds: [...done.trajectoryIds, member.trajectoryId] });
        }
      } else {
        const open = groups.get(key) ?? { openedAt: timestamp || now, partition, members: [] };
        const group = { ...open, members: [...open.members.filter((m) => m.trajectoryId !== member.trajectoryId), member] };
        if (group.members.length >= member.groupSize) outputs.push(...close(key, group, { by: 'complete' }, now));
        else groups.put(key, group);
      }

      if (now - (clock.get(sweepKey(partition)) ?? 0) >= 60_000) {
        clock.put(sweepKey(partition), now);
        for (const [closedKey, group] of closed.entries()) if (group.partition === partition && now - group.closedAt >= settings.closedRetentionMs) closed.delete(closedKey);
      }
      return outputs;
    },
  );
}
