import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CheckpointRecordError, isRetriable, nowIso, type PolicyCheckpoint } from '../../schemas/index.js';
import { checkCheckpoint, followCheckpoints, NOTHING_FOLLOWED, type CheckpointRecord, type FollowedCheckpoints } from './follower.js';

function checkpoint(version: number, sha256 = String(version).repeat(64).slice(0, 64)): PolicyCheckpoint {
  return {
    policyId: 'p', version, parentVersion: version - 1, featureNames: [], weights: [], sha256,
    artifact: { uri: `file:///ckpt/p/v${version}.bin`, sha256, bytes: 4, format: null },
    metrics: { samples: 1, meanReward: 0, meanAbsAdvantage: 0, gradNorm: 0, staleDropped: 0, extra: {} },
    lineage: { taskId: 'all', attempt: 0, runId: 'r', policyVersion: version, sandboxImageDigest: null, verifierVersion: null, createdAt: nowIso() },
  };
}
/** What `trialrun policy rollback 0` pins: the initial policy, no artifact. */
const initial: PolicyCheckpoint = { ...checkpoint(0), artifact: null };
const ckpt = (c: PolicyCheckpoint): CheckpointRecord => ({ topic: 'checkpoint', checkpoint: c });
const pin = (c: PolicyCheckpoint | null): CheckpointRecord => ({ topic: 'pin', checkpoint: c });

/** Feeds records in order as a follower does: a record the check refuses leaves the state as it was. */
function follow(records: CheckpointRecord[]): { state: FollowedCheckpoints; served: Array<number | null>; refused: string[] } {
  let state = NOTHING_FOLLOWED;
  const served: Array<number | null> = [];
  const refused: string[] = [];
  for (const record of records) {
    try {
      const step = followCheckpoints(state, record);
      if (step === null) continue;
      state = step.next;
      if (step.servedChanges) served.push(step.serve?.version ?? 0);
    } catch (error) {
      assert.ok(error instanceof CheckpointRecordError);
      refused.push(error.message);
    }
  }
  return { state, served, refused };
}

test('a checkpoint record names an artifact with its own sha256; version 0 without one is the initial policy', () => {
  const good = checkpoint(2);
  assert.equal(checkCheckpoint(good), good.artifact);
  assert.equal(checkCheckpoint(initial), null);
  const cases: Array<[PolicyCheckpoint, RegExp]> = [
    [{ ...good, artifact: null }, /^checkpoint v2 has no artifact$/],
    [{ ...good, sha256: 'c'.repeat(64) }, /^checkpoint v2: the record's sha256 c{64} is not its artifact's 2{64}$/],
    [{ ...checkpoint(0), sha256: 'c'.repeat(64) }, /^checkpoint v0: the record's sha256/],
  ];
  for (const [bad, reason] of cases) {
    assert.throws(() => checkCheckpoint(bad), (error: unknown) => error instanceof CheckpointRecordError && reason.test(error.message) && error.version === bad.version && !isRetriable(error));
  }
});

test('the newest checkpoint is served; older ones, which compaction and replays bring again, change nothing', () => {
  const { state, served } = follow([ckpt(checkpoint(1)), ckpt(checkpoint(3)), ckpt(checkpoint(2))]);
  assert.deepEqual(served, [1, 3]);
  assert.equal(state.newest?.version, 3);
  assert.equal(followCheckpoints(state, ckpt(checkpoint(1))), null);
});

test('the newest again is a step marked again: a follower that holds it does nothing, a retried one serves it again', () => {
  const first = followCheckpoints(NOTHING_FOLLOWED, ckpt(checkpoint(2)))!;
  assert.equal(first.again, false);
  const again = followCheckpoints(first.next, ckpt(checkpoint(2)))!;
  assert.equal(again.again, true);
  assert.equal(again.serve?.version, 2);
  // Nothing taken yet is the initial policy, version 0.
  assert.equal(followCheckpoints(NOTHING_FOLLOWED, ckpt(initial))!.again, true);
});

test('a pin is served instead of the newest until an unpin; checkpoints that arrive meanwhile are taken but not served', () => {
  const { state, served } = follow([ckpt(checkpoint(1)), ckpt(checkpoint(2)), pin(checkpoint(1)), ckpt(checkpoint(3)), pin(null)]);
  assert.deepEqual(served, [1, 2, 1, 3]);
  assert.deepEqual([state.newest?.version, state.pinned], [3, null]);
  // A rollback to 0 pins the initial policy: what is served is version 0, and the pin holds.
  const rolledBack = follow([ckpt(checkpoint(1)), pin(initial), ckpt(checkpoint(2))]);
  assert.deepEqual(rolledBack.served, [1, 0]);
  assert.equal(rolledBack.state.pinned, initial);
});

test('a record that fails the check is refused with CheckpointRecordError and what is served stays', () => {
  const forged = { ...checkpoint(2), sha256: '0'.repeat(64) };
  const { state, served, refused } = follow([ckpt(checkpoint(1)), ckpt(forged), pin(forged), ckpt({ ...checkpoint(3), artifact: null })]);
  assert.deepEqual(served, [1]);
  assert.deepEqual([state.newest?.version, state.pinned], [1, null]);
  assert.deepEqual(refused.map((message) => message.replace(/:.*/, '')), ['checkpoint v2', 'checkpoint v2', 'checkpoint v3 has no artifact']);
});
