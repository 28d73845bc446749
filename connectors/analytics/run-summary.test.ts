import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { AnalyticsCatalog } from './catalog.js';
import { summarizeRun } from './run-summary.js';

const dataDir = mkdtempSync(join(tmpdir(), 'run-summary-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

test('a query binds its $name parameters: a value with quotes is a value, never SQL', async () => {
  const catalog = await AnalyticsCatalog.open(dataDir);
  try {
    const quoted = "it's'; DROP TABLE trajectories; --";
    assert.deepEqual((await catalog.query('SELECT $text AS text, $n + 1 AS next', { text: quoted, n: 41 })).rows, [[quoted, 42]]);
    // BIGINT counts come back as strings (JSON-safe rows).
    assert.deepEqual((await catalog.query('SELECT count(*) FROM trajectories WHERE run_id = $run_id', { run_id: quoted })).rows, [['0']]);
  } finally {
    catalog.close();
  }
});

test('a run with no rows in the store summarises to zeros and empty counts', async () => {
  const catalog = await AnalyticsCatalog.open(dataDir);
  try {
    assert.deepEqual(await summarizeRun(catalog, "run-'x'"), {
      rows: { trajectories: 0, verifications: 0, rewards: 0, checkpoints: 0 },
      passRate: 0,
      meanReward: 0,
      byPolicyVersion: [],
      rewardDispositions: {},
      outcomes: {},
      sandboxSeconds: 0,
    });
  } finally {
    catalog.close();
  }
});
