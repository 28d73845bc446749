import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { AnalyticsCatalog, bucketOf, dataFileName, REWARDS, TRAJECTORIES, VERIFICATIONS, writeParquetRows, type Row } from '../../connectors/analytics/index.js';
import { queryAnalytics } from '../../dashboard/index.js';
import { effectiveEpisodes, wilsonRateInterval } from '../../pipelines/jobs/evaluate/index.js';
import { Verification, type Reward, type Trajectory } from '../../schemas/index.js';
import { syntheticPassed, syntheticReward, syntheticTrajectory, syntheticVerification } from './analytics-fixtures.js';
import { tempDir } from './harness.js';

/** Writes records where the sink would, as one offset range of partition 0. */
async function land<R extends { lineage: { runId: string; createdAt: string } }>(dataDir: string, table: string, spec: unknown, records: readonly R[], first: number): Promise<void> {
  const rows: Row<R>[] = records.map((record, i) => ({ record, meta: { topic: `t.${table}`, partition: 0, offset: String(first + i) } }));
  const range = { topic: `t.${table}`, partition: 0, first: BigInt(first), last: BigInt(first + records.length - 1) };
  await writeParquetRows(join(dataDir, table, bucketOf(records[0]!.lineage.runId, records[0]!.lineage.createdAt), dataFileName(range)), spec as never, rows);
}

test('the dashboard\'s analytics panels: per-version pass rates with Wilson intervals over what a task\'s correlated episodes are worth, rewards, hack flags, verifier versions, one run only', async () => {
  const dataDir = tempDir('dashboard-analytics');
  // Five tasks, so a version's episodes come two to a task (the passes cluster: both episodes of task 1 pass in each version).
  const options = { runId: 'shown', perVersion: 10, steps: 2, tasks: 5 };
  const n = 20;
  const trajectories: Trajectory[] = Array.from({ length: n }, (_, i) => syntheticTrajectory(i, options));
  // Trajectory 3 left a conftest.py behind: its verification carries the flag and the evidence.
  const verifications: Verification[] = Array.from({ length: n }, (_, i) =>
    i === 3
      ? Verification.parse({ ...syntheticVerification(i, options), hacks: [{ kind: 'conftest', evidence: 'conftest.py redefines pytest_runtest_call', path: 'conftest.py', line: 4, source: 'files' }] })
      : syntheticVerification(i, options),
  );
  // The last trajectory has no reward yet; the one before no verification.
  const rewards: Reward[] = Array.from({ length: n - 2 }, (_, i) => syntheticReward(i, options));
  await land(dataDir, 'trajectories', TRAJECTORIES, trajectories, 0);
  await land(dataDir, 'verifications', VERIFICATIONS, verifications.filter((_, i) => i !== n - 2), 0);
  await land(dataDir, 'rewards', REWARDS, rewards, 0);
  // Another run in the same store stays out of every panel.
  await land(dataDir, 'trajectories', TRAJECTORIES, [syntheticTrajectory(0, { runId: 'other', steps: 1 })], 100);

  const catalog = await AnalyticsCatalog.open(dataDir, { runIds: ['shown'] });
  try {
    const part = await queryAnalytics(catalog);
    assert.equal(part.landed.get('trajectories'), n);
    assert.equal(part.landed.get('verifications'), n - 1);
    assert.equal(part.awaitingVerification, 1);
    assert.equal(part.awaitingReward, 1, 'verified, not yet rewarded');
    for (const version of [0, 1]) {
      const members = Array.from({ length: 10 }, (_, k) => version * 10 + k).filter((i) => i !== n - 2);
      const passes = members.filter((i) => syntheticPassed(i, options)).length;
      const row = part.policyVersions.find((r) => r.policyVersion === version)!;
      assert.equal(row.episodes, members.length);
      assert.equal(row.passes, passes);
      const tallies = Array.from({ length: options.tasks }, (_, task) => members.filter((i) => i % options.tasks === task)).map((episodes) => ({ episodes: episodes.length, successes: episodes.filter((i) => syntheticPassed(i, options)).length }));
      const worth = effectiveEpisodes(tallies);
      assert.ok(Math.abs(row.effectiveEpisodes - worth) < 1e-9, `version ${version}: worth ${row.effectiveEpisodes}, expected ${worth}`);
      assert.ok(worth < members.length, 'the episodes of a task are worth less than as many independent ones');
      // The catalog's wilson_low/high macros take z as 1.96.
      const interval = wilsonRateInterval(passes / members.length, worth, 1.96);
      assert.ok(Math.abs(row.passLow - interval.low) < 1e-4 && Math.abs(row.passHigh - interval.high) < 1e-4, `version ${version}: [${row.passLow}, ${row.passHigh}] against [${interval.low}, ${interval.high}]`);
      const rewarded = Array.from({ length: 10 }, (_, k) => version * 10 + k).filter((i) => i < n - 2);
      assert.equal(row.rewards, rewarded.length);
      const mean = rewarded.filter((i) => syntheticPassed(i, options)).length / rewarded.length;
      assert.ok(Math.abs(row.meanReward! - mean) < 1e-9);
      assert.ok(row.rewardLow! <= row.meanReward! && row.meanReward! <= row.rewardHigh!);
    }
    // The macros' intervals hold their rate, also at 0 and 1 where rounding once put a bound 1e-17 outside it.
    const outside = await catalog.query(`SELECT count(*) FROM range(1, 400) t(i), (VALUES (0.0), (0.25), (1.0)) r(p)
      WHERE NOT (wilson_low(p, i / 4) <= p AND p <= wilson_high(p, i / 4) AND wilson_low(p, i / 4) >= 0 AND wilson_high(p, i / 4) <= 1)`);
    assert.equal(Number(outside.rows[0]![0]), 0);
    assert.deepEqual(part.hacks.byKind, [{ kind: 'conftest', count: 1 }]);
    assert.deepEqual(part.hacks.recent, [{ trajectoryId: 'shown/t3', policyVersion: 0, kind: 'conftest', evidence: 'conftest.py redefines pytest_runtest_call', path: 'conftest.py', line: 4, source: 'files' }]);
    assert.deepEqual(part.verifierVersions.map((r) => [r.verifierVersion, r.verifications]), [['v-synthetic0000', n - 1]]);
    assert.ok(part.throughput.length > 0 && part.throughput.every((r) => r.records > 0 && r.perSecond === r.records / 10), 'records per 10 s bin');
    assert.equal(part.throughput.filter((r) => r.stage === 'trajectories').reduce((sum, r) => sum + r.records, 0), n);
    assert.deepEqual(part.learner, []);
  } finally {
    catalog.close();
  }
});
