import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { AnalyticsCatalog } from '../../connectors/analytics/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { evaluatePolicy, landEvaluation } from '../../pipelines/jobs/evaluate/index.js';
import { prepareTasks } from '../../pipelines/jobs/task-job/index.js';
import { linearRepairKind } from '../../policies/index.js';
import { imageFor } from '../../stack/index.js';
import { repoRoot } from '../../cli/paths.js';
import { ensureStack, freshContext, tempDir } from './harness.js';

const pool = new DockerSandboxPool();
before(ensureStack, { timeout: 900_000 });
after(() => pool.close());

test('two policy versions meet the same episode streams, and their evaluations land in the analytics store as one run', { timeout: 300_000 }, async () => {
  const { tasks } = await prepareTasks({ file: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'), rejectsDir: tempDir('evaluate-rejects') });
  const held = tasks.slice(0, 2);
  const { params } = linearRepairKind.initial();
  const options = { pool, imageFor, runId: 'it-heldout', maxTurns: 8, samplesPerTask: 2, seed: 'it' };
  const first = await evaluatePolicy(await linearRepairKind.load(params, 0), held, options);
  const second = await evaluatePolicy(await linearRepairKind.load(params, 3), held, options);
  assert.equal(first.episodes, 4);
  assert.equal(first.successesWithin.length, 9);
  assert.equal(first.successesWithin[8], first.successes, 'every success is within the turn budget');
  // Same parameters on the same streams: the same edits tried, the same outcome, episode by episode.
  const choices = (records: typeof first.records) => records.map(({ trajectory }) => trajectory.steps.map((step) => JSON.stringify(step.toolCall)).join(' '));
  assert.deepEqual(choices(second.records), choices(first.records));
  assert.deepEqual(second.byTask, first.byTask);
  assert.ok(first.records.every(({ trajectory }) => trajectory.trajectoryId.endsWith('@v0') && trajectory.lineage.runId === 'it-heldout'));
  assert.ok(second.records.every(({ trajectory }) => trajectory.trajectoryId.endsWith('@v3')));

  const dataDir = tempDir('evaluate-store');
  await landEvaluation(await freshContext('heldout'), [...first.records, ...second.records], { dataDir });
  const catalog = await AnalyticsCatalog.open(dataDir);
  try {
    const result = await catalog.query(
      `SELECT t.policy_version, count(*) AS n, sum(CASE WHEN v.passed THEN 1 ELSE 0 END) AS passed
       FROM trajectories t JOIN verifications v USING (trajectory_id) WHERE t.run_id = 'it-heldout' GROUP BY 1 ORDER BY 1`,
    );
    assert.deepEqual(
      result.rows.map(([version, n, passed]) => [Number(version), Number(n), Number(passed)]),
      [
        [0, 4, first.successes],
        [3, 4, second.successes],
      ],
    );
  } finally {
    catalog.close();
  }
});
