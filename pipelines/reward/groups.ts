import { finiteNumber, nowIso, wholeNumber, type Reward, type RewardDisposition, type Verification } from '../../schemas/index.js';
import { groupAdvantages } from './advantages.js';

export interface GroupScoringOptions {
  /** Fewest members a group closed by its straggler deadline needs to be scored; fewer are withheld. @default 2 */
  minGroupSize?: number;
  /** Added to the group std before dividing. @default 1e-6 */
  epsilon?: number;
}

export type ResolvedGroupScoring = Readonly<Required<GroupScoringOptions>>;

export function resolveGroupScoring(options: GroupScoringOptions = {}): ResolvedGroupScoring {
  const resolved = { minGroupSize: 2, epsilon: 1e-6, ...options };
  wholeNumber('GroupScoringOptions.minGroupSize', resolved.minGroupSize, { min: 1 });
  finiteNumber('GroupScoringOptions.epsilon', resolved.epsilon, { above: 0 });
  return resolved;
}

/** The part of a verification a reward group keeps (the test list stays out of the state store). */
export interface GroupMember {
  readonly verificationId: string;
  readonly trajectoryId: string;
  readonly groupId: string;
  readonly groupSize: number;
  readonly passed: boolean;
  /**
   * The reward the verifier gave under the task's RewardSpec, in [0, 1] (0 on any hack). Absent in members
   * stored before it existed and on verifications written before it: `passed ? 1 : 0` then.
   */
  readonly score?: number;
  readonly fractionPassed: number;
  readonly hacked: boolean;
  readonly quarantine: string | null;
  /**
   * Set when the verification could not judge the trajectory for a reason of ours (the grading sandbox was
   * lost, its runner printed nothing readable), with no sign of the agent's doing: what failed. Absent in
   * members stored before it existed, which counts as null.
   */
  readonly infraFailure?: string | null;
  readonly rescoreId: string | null;
  readonly lineage: Verification['lineage'];
}

/** Verdicts that say nothing about the agent: infrastructure failed, and no hack flag points at the agent. */
function infraFailureOf(verification: Verification): string | null {
  if (verification.failure !== 'sandbox-error' || (verification.hacks ?? []).length > 0) return null;
  return verification.failureDetail ? `sandbox-error: ${verification.failureDetail}` : 'sandbox-error';
}

/** A verification's reward: the verifier's score, or for records without one, 1 for a pass and 0 otherwise. */
export const rewardOf = (verification: Pick<Verification, 'passed' | 'score' | 'hacks'>): number =>
  (verification.hacks ?? []).length > 0 ? 0 : (verification.score ?? (verification.passed ? 1 : 0));

export function memberOf(verification: Verification): GroupMember {
  return {
    verificationId: verification.verificationId,
    trajectoryId: verification.trajectoryId,
    groupId: verification.groupId,
    groupSize: verification.groupSize,
    passed: verification.passed,
    score: rewardOf(verification),
    fractionPassed: verification.fractionPassed,
    hacked: (verification.hacks ?? []).length > 0,
    quarantine: verification.quarantine?.reason ?? null,
    infraFailure: infraFailureOf(verification),
    rescoreId: verification.rescoreId ?? null,
    lineage: verification.lineage,
  };
}

/**
 * Rewards are grouped per (group, verifier version): a re-scored group never mixes verdicts of two
 * verifiers, so its advantages compare like with like.
 */
export const groupKey = (member: Pick<GroupMember, 'groupId' | 'lineage' | 'rescoreId'>): string =>
  `${member.groupId}|${member.lineage.verifierVersion ?? 'unversioned'}|${member.rescoreId ?? 'live'}`;

const memberReward = (member: GroupMember): number => (member.hacked ? 0 : (member.score ?? (member.passed ? 1 : 0)));

/** Why a group is being scored now. */
export type GroupClosure = { readonly by: 'complete' } | { readonly by: 'deadline' | 'end-of-range'; readonly expected: number };

function reward(member: GroupMember, fields: Pick<Reward, 'reward' | 'advantage' | 'groupMean' | 'groupStd' | 'groupSize' | 'disposition' | 'reason'>): Reward {
  return {
    rewardId: `${member.verificationId}/reward`,
    trajectoryId: member.trajectoryId,
    verificationId: member.verificationId,
    groupId: member.groupId,
    ...fields,
    fractionPassed: member.fractionPassed,
    hacked: member.hacked,
    rescoreId: member.rescoreId,
    lineage: { ...member.lineage, createdAt: nowIso() },
  };
}

/**
 * One reward per member: the verifier's score (binary or partial credit under the task's RewardSpec, 0 on
 * any hack flag; 1 for a pass in records without a score), with GRPO's group-relative advantage. A quarantined task's rewards are withheld; a group closed by its
 * deadline with fewer than `minGroupSize` members is withheld; a group whose rewards are all equal has
 * no signal (dynamic sampling): neither reaches the learner, and both say why. A member whose verification
 * failed for a reason of ours (`infraFailure`) is withheld on its own, and the rest are scored without it:
 * a 0 it did not earn would teach the policy nothing true.
 */
export function scoreGroup(members: readonly GroupMember[], closure: GroupClosure, options: ResolvedGroupScoring): Reward[] {
  if (members.length === 0) return [];
  const withheld = members.filter((m) => m.infraFailure);
  const judged = scoreJudged(members.filter((m) => !m.infraFailure), closure, options);
  return [
    ...judged,
    ...withheld.map((m) =>
      reward(m, { reward: 0, advantage: 0, groupMean: 0, groupStd: 0, groupSize: members.length, disposition: 'withheld', reason: `not judged: ${m.infraFailure}` }),
    ),
  ];
}

function scoreJudged(members: readonly GroupMember[], closure: GroupClosure, options: ResolvedGroupScoring): Reward[] {
  if (members.length === 0) return [];
  const ordered = [...members].sort((a, b) => a.lineage.attempt - b.lineage.attempt || a.trajectoryId.localeCompare(b.trajectoryId));
  const rewards = ordered.map(memberReward);
  const stats = groupAdvantages(rewards, options.epsilon);
  const partial = closure.by === 'complete' ? null : `${ordered.length} of ${closure.expected} members verified by the ${closure.by === 'deadline' ? 'straggler deadline' : 'end of the re-scored range'}`;
  const quarantined = ordered.find((m) => m.quarantine !== null)?.quarantine ?? null;

  let disposition: RewardDisposition = 'learn';
  let reason: string | null = partial === null ? null : `scored with ${partial}`;
  if (quarantined !== null) [disposition, reason] = ['withheld', `task quarantined: ${quarantined}`];
  else if (partial !== null && ordered.length < options.minGroupSize) [disposition, reason] = ['withheld', `only ${partial} (minimum ${options.minGroupSize})`];
  else if (stats.std === 0) [disposition, reason] = ['no-signal', `all ${ordered.length} rewards are ${rewards[0]}: every advantage is 0${partial ? `; ${partial}` : ''}`];

  const learn = disposition === 'learn';
  return ordered.map((m, i) =>
    reward(m, {
      reward: rewards[i]!,
      advantage: learn ? stats.advantages[i]! : 0,
      groupMean: stats.mean,
      groupStd: stats.std,
      groupSize: ordered.length,
      disposition,
      reason,
    }),
  );
}

/** What is remembered of a scored group, to recognise late members and duplicates. */
export interface ClosedGroup {
  readonly closedAt: number;
  readonly trajectoryIds: string[];
  readonly mean: number;
  readonly std: number;
}

/** The reward of a member that arrived after its group was scored: recorded, never learned from. */
export function lateReward(member: GroupMember, closed: ClosedGroup): Reward {
  return reward(member, {
    reward: memberReward(member),
    advantage: 0,
    groupMean: closed.mean,
    groupStd: closed.std,
    groupSize: closed.trajectoryIds.length,
    disposition: 'late',
    reason: `arrived after its group was scored with ${closed.trajectoryIds.length} members`,
  });
}
