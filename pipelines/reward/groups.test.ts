import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, type Verification } from '../../schemas/index.js';
import { groupKey, lateReward, memberOf, resolveGroupScoring, scoreGroup, type GroupMember } from './groups.js';

const scoring = resolveGroupScoring();

function member(attempt: number, passed: boolean, extra: Partial<GroupMember> = {}): GroupMember {
  const lineage = { taskId: 't', attempt, runId: 'r', policyVersion: 0, sandboxImageDigest: null, verifierVersion: 'v-1', createdAt: new Date(0).toISOString() };
  return { verificationId: `traj-${attempt}/v-1`, trajectoryId: `traj-${attempt}`, groupId: 'g', groupSize: 4, passed, fractionPassed: passed ? 1 : 0.5, hacked: false, quarantine: null, rescoreId: null, lineage, ...extra };
}

const members = (passes: boolean[], extra: Partial<GroupMember> = {}) => passes.map((p, i) => member(i, p, extra));

test('a verification becomes a group member with its hack and quarantine state', () => {
  const m = memberOf({
    ...member(0, false),
    tests: [],
    testsPassed: 0,
    testsTotal: 2,
    failure: null,
    durationMs: 1,
    hacks: [{ kind: 'conftest', evidence: 'the final files add conftest.py', path: 'conftest.py', line: null, source: 'files' }],
    quarantine: { reason: 'flaky', referenceVerdicts: [true, false] },
  } as Verification);
  assert.deepEqual([m.hacked, m.quarantine, m.rescoreId, m.fractionPassed], [true, 'flaky', null, 0.5]);
  assert.deepEqual(memberOf({ ...member(1, true), tests: [], testsPassed: 2, testsTotal: 2, failure: null, durationMs: 1, quarantine: undefined, rescoreId: undefined } as unknown as Verification).hacked, false, 'records from before hack flags count as clean');
});

test('a complete mixed group learns GRPO advantages, records the fraction passed, and sums to zero', () => {
  const rewards = scoreGroup(members([true, false, false, true]), { by: 'complete' }, scoring);
  assert.deepEqual(rewards.map((r) => [r.reward, r.disposition, r.reason]), [
    [1, 'learn', null],
    [0, 'learn', null],
    [0, 'learn', null],
    [1, 'learn', null],
  ]);
  assert.ok(Math.abs(rewards[0]!.advantage - 1) < 1e-5 && Math.abs(rewards[1]!.advantage + 1) < 1e-5);
  assert.deepEqual(rewards.map((r) => r.fractionPassed), [1, 0.5, 0.5, 1]);
  assert.equal(rewards[0]!.lineage.verifierVersion, 'v-1');
});

test('all-equal groups carry no signal (dynamic sampling) and say so', () => {
  for (const passes of [[false, false, false, false], [true, true, true, true]]) {
    const rewards = scoreGroup(members(passes), { by: 'complete' }, scoring);
    assert.ok(rewards.every((r) => r.disposition === 'no-signal' && r.advantage === 0));
    assert.match(rewards[0]!.reason!, /all 4 rewards are [01]/);
  }
});

test('a hacked member scores 0 and is marked, even beside honest passes', () => {
  const hacked = member(2, false, { hacked: true });
  const rewards = scoreGroup([...members([true, true]), hacked], { by: 'complete' }, scoring);
  assert.deepEqual(rewards.map((r) => [r.reward, r.hacked]), [[1, false], [1, false], [0, true]]);
  assert.ok(rewards[2]!.advantage < 0, 'gaming the verifier is pushed down');
});

test('a quarantined task is withheld with its reason', () => {
  const rewards = scoreGroup(members([true, false], { quarantine: 'flaky: verdict changed' }), { by: 'complete' }, scoring);
  assert.ok(rewards.every((r) => r.disposition === 'withheld' && r.advantage === 0));
  assert.equal(rewards[0]!.reason, 'task quarantined: flaky: verdict changed');
});

test('at the straggler deadline: enough members are scored (and say so), too few are withheld', () => {
  const partial = scoreGroup(members([true, false, false]), { by: 'deadline', expected: 4 }, scoring);
  assert.ok(partial.every((r) => r.disposition === 'learn' && r.groupSize === 3));
  assert.equal(partial[0]!.reason, 'scored with 3 of 4 members verified by the straggler deadline');
  const lonely = scoreGroup(members([true]), { by: 'deadline', expected: 4 }, resolveGroupScoring({ minGroupSize: 2 }));
  assert.equal(lonely[0]!.disposition, 'withheld');
  assert.equal(lonely[0]!.reason, 'only 1 of 4 members verified by the straggler deadline (minimum 2)');
});

test('late members are recorded, never learned from', () => {
  const late = lateReward(member(3, true), { closedAt: 0, trajectoryIds: ['traj-0', 'traj-1', 'traj-2'], mean: 0.5, std: 0.5 });
  assert.deepEqual([late.disposition, late.advantage, late.reward, late.groupSize], ['late', 0, 1, 3]);
});

test('groups are keyed by verifier version and re-scoring run, so versions never mix', () => {
  const live = member(0, true);
  const other = member(0, true, { lineage: { ...live.lineage, verifierVersion: 'v-2' } });
  const rescored = member(0, true, { rescoreId: 'rescore-1' });
  assert.equal(new Set([groupKey(live), groupKey(other), groupKey(rescored)]).size, 3);
});

test('scoring options are checked', () => {
  assert.throws(() => resolveGroupScoring({ minGroupSize: 0 }), (error: unknown) => error instanceof ConfigError && /^GroupScoringOptions.minGroupSize must be a whole number >= 1, got 0$/.test(error.message));
  assert.throws(() => resolveGroupScoring({ epsilon: 0 }), (error: unknown) => error instanceof ConfigError && /^GroupScoringOptions.epsilon must be a number > 0, got 0$/.test(error.message));
});

test('a member the verifier could not judge (its sandbox was lost) is withheld, and the rest are scored without it', () => {
  const lost = member(3, false, { infraFailure: 'sandbox-error: the sandbox was lost under two runs in a row' });
  const rewards = scoreGroup([...members([true, false, false]), lost], { by: 'complete' }, scoring);
  const byTrajectory = new Map(rewards.map((r) => [r.trajectoryId, r]));
  assert.deepEqual([byTrajectory.get('traj-3')!.disposition, byTrajectory.get('traj-3')!.advantage, byTrajectory.get('traj-3')!.reason], ['withheld', 0, 'not judged: sandbox-error: the sandbox was lost under two runs in a row']);
  assert.deepEqual(rewards.filter((r) => r.disposition === 'learn').map((r) => r.trajectoryId).sort(), ['traj-0', 'traj-1', 'traj-2']);
  assert.ok(Math.abs(rewards.filter((r) => r.disposition === 'learn').reduce((sum, r) => sum + r.advantage, 0)) < 1e-5, 'the judged members alone sum to zero');
  assert.equal(rewards.length, 4, 'every member gets a reward record');
});

test('only an infrastructure failure without a hack flag is withheld', () => {
  const base = { ...member(0, false), tests: [], testsPassed: 0, testsTotal: 2, durationMs: 1 };
  assert.equal(memberOf({ ...base, failure: 'sandbox-error', failureDetail: 'runner printed nothing' } as Verification).infraFailure, 'sandbox-error: runner printed nothing');
  assert.equal(memberOf({ ...base, failure: 'crash', failureDetail: 'killed by SIGKILL' } as Verification).infraFailure, null, "a crash is the agent's to own");
  const flagged = { ...base, failure: 'sandbox-error', hacks: [{ kind: 'runner-killed', evidence: 'x', path: null, line: null, source: 'runtime' }] } as unknown as Verification;
  assert.equal(memberOf(flagged).infraFailure, null, 'a hack flag makes it the agent\'s doing');
});

test('fractional scores are the rewards: advantages centre on their mean, a hack is 0 whatever its score', () => {
  const scores = [1, 0.5, 0.25, 0];
  const rewards = scoreGroup(scores.map((score, i) => member(i, score === 1, { score })), { by: 'complete' }, scoring);
  assert.deepEqual(rewards.map((r) => r.reward), scores);
  assert.ok(Math.abs(rewards[0]!.groupMean - 0.4375) < 1e-9);
  assert.ok(Math.abs(rewards.reduce((sum, r) => sum + r.advantage, 0)) < 1e-6, 'advantages sum to zero');
  assert.ok(rewards[0]!.advantage > rewards[1]!.advantage && rewards[1]!.advantage > rewards[2]!.advantage && rewards[2]!.advantage > rewards[3]!.advantage);
  // Equal partial credit across the group is no signal, as equal binary rewards are.
  assert.equal(scoreGroup([0.5, 0.5].map((score, i) => member(i, false, { score })), { by: 'complete' }, scoring)[0]!.disposition, 'no-signal');
  assert.equal(scoreGroup([member(0, false, { score: 0.8, hacked: true }), member(1, false, { score: 0.5 })], { by: 'complete' }, scoring)[0]!.reward, 0);
});

test('a verification\'s score becomes its member\'s; records without one score passed ? 1 : 0', () => {
  const base = { ...member(0, false), tests: [], testsPassed: 0, testsTotal: 2, failure: null, durationMs: 1, hacks: [] } as unknown as Verification;
  assert.equal(memberOf({ ...base, score: 0.75 }).score, 0.75);
  assert.equal(memberOf({ ...base, passed: true }).score, 1);
  assert.equal(memberOf(base).score, 0);
  assert.equal(lateReward({ ...member(3, false), score: 0.25 }, { closedAt: 0, trajectoryIds: [], mean: 0, std: 0 }).reward, 0.25);
});
