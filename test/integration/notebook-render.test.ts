import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { AnalyticsCatalog, notebookHtml, parseNotebook, runNotebook, type CellResult } from '../../connectors/analytics/index.js';
import { LocalCheckpointStore } from '../../connectors/checkpoints/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { AnalyticsSink } from '../../pipelines/analytics-sink/index.js';
import { runLoop } from '../../pipelines/loop/index.js';
import type { ProcessorContext } from '../../pipelines/runtime/index.js';
import { Verification } from '../../schemas/index.js';
import { imageFor } from '../../stack/index.js';
import { repoRoot } from '../../cli/paths.js';
import { ensureStack, eventually, freshContext, readAll, sendRaw, tempDir } from './harness.js';

const pool = new DockerSandboxPool();
before(ensureStack, { timeout: 900_000 });
after(() => pool.close());

const NOTEBOOKS = join(repoRoot(), 'notebooks');

/** The data labels of a chart's marks (`policy version: 1; pass rate: 50.000000%`) as objects; percentages become fractions. */
function markLabels(html: string, cellId: string, first: string): Array<Record<string, string | number>> {
  const section = html.slice(html.indexOf(`<section id="${cellId}">`), html.indexOf('</section>', html.indexOf(`<section id="${cellId}">`)));
  const labels = new Set([...section.matchAll(/aria-label="([^"]*)"/g)].map((m) => m[1]!).filter((label) => label.startsWith(`${first}: `)));
  return [...labels].map((label) =>
    Object.fromEntries(
      label.split('; ').map((pair) => {
        const [key, value] = pair.split(': ') as [string, string];
        const number = value.endsWith('%') ? Number(value.slice(0, -1)) / 100 : Number(value.replaceAll(',', ''));
        return [key, Number.isNaN(number) ? value : number];
      }),
    ),
  );
}

async function render(dataDir: string, name: string): Promise<{ html: string; results: CellResult[] }> {
  const notebook = parseNotebook(name, readFileSync(join(NOTEBOOKS, `${name}.sql`), 'utf8'));
  const catalog = await AnalyticsCatalog.open(dataDir);
  try {
    const results = await runNotebook(catalog, notebook);
    return { html: notebookHtml(notebook, results, { source: dataDir, generatedAt: new Date() }), results };
  } finally {
    catalog.close();
  }
}

const round = (x: number): number => Math.round(x * 1e6) / 1e6;

/** A second verifier's verdicts on the same trajectories, as a re-scoring writes them, disagreeing on every other one. */
async function publishSecondVerifier(context: ProcessorContext): Promise<Map<string, boolean>> {
  const flipped = new Map<string, boolean>();
  const messages = [];
  for (const [i, v] of (await readAll(context, 'verifications')).entries()) {
    const passed = i % 2 === 0 ? !v.passed : v.passed;
    if (passed !== v.passed) flipped.set(v.trajectoryId, passed);
    const second = Verification.parse({ ...v, verificationId: `${v.trajectoryId}/v-second000000`, passed, rescoreId: 'it-second', lineage: { ...v.lineage, verifierVersion: 'v-second000000', createdAt: new Date().toISOString() } });
    messages.push({ key: second.groupId, value: await context.serde.encode('verifications', second) });
  }
  await sendRaw(context, 'verifications', messages);
  return flipped;
}

test('every notebook renders on a real demo run, and its charts show what its SQL says', { timeout: 600_000 }, async () => {
  const context = await freshContext('notebooks');
  const dataDir = tempDir('notebooks');
  const summary = await runLoop(context, {
    taskFile: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'),
    dataDir,
    pool,
    imageFor,
    checkpoints: new LocalCheckpointStore(tempDir('notebook-checkpoints')),
    limitTasks: 3,
    groupSize: 2,
    batchSize: 2,
    maxTurns: 8,
    rolloutWorkers: 2,
  });
  assert.equal(summary.trajectories, 6);

  // A second verifier version, so the disagreement notebook has pairs to compare; the sink lands it.
  const flipped = await publishSecondVerifier(context);
  const sink = new AnalyticsSink(context, { dataDir, rollAgeMs: 200 });
  await sink.start();
  try {
    await eventually('the second verdicts landed', async () => (sink.rowsWritten.get('verifications') ?? 0) === 6, 60_000);
  } finally {
    await sink.stop();
  }

  const out = tempDir('notebook-reports');
  const names = readdirSync(NOTEBOOKS).filter((f) => f.endsWith('.sql')).map((f) => f.slice(0, -4));
  assert.deepEqual(names.sort(), ['difficulty', 'hack-flags', 'learning-curve', 'llm-rollouts', 'rewards', 'sandbox-latency', 'tool-mix', 'verifier-disagreement']);
  const reports = new Map<string, { html: string; results: CellResult[] }>();
  for (const name of names) {
    const report = await render(dataDir, name);
    writeFileSync(join(out, `${name}.html`), report.html);
    reports.set(name, report);
    assert.match(report.html, /^<!doctype html>/);
    assert.doesNotMatch(report.html, /<script(?! type="application\/json")/, 'no executable script');
    for (const cell of report.results) {
      const embedded = JSON.parse(report.html.split(`<script type="application/json" id="data-${cell.id}">`)[1]!.split('</script>')[0]!);
      assert.deepEqual(embedded, JSON.parse(JSON.stringify(cell.records)), `${name}/${cell.id}: the embedded rows are the query's`);
    }
  }
  const charts = [...reports.values()].reduce((sum, r) => sum + r.results.reduce((n, c) => n + c.svgs.length, 0), 0);
  assert.ok(charts >= 10, `charts were drawn (${charts})`);

  // The learning curve, computed from the topics themselves, is what the chart draws.
  const [trajectories, verifications, rewards] = await Promise.all([readAll(context, 'trajectories'), readAll(context, 'verifications'), readAll(context, 'rewards')]);
  const liveVerdict = new Map(verifications.filter((v) => (v.rescoreId ?? null) === null).map((v) => [v.trajectoryId, v.passed]));
  assert.equal(liveVerdict.size, 6);
  const byVersion = new Map<number, { n: number; passed: number }>();
  for (const t of trajectories) {
    const entry = byVersion.get(t.lineage.policyVersion ?? 0) ?? { n: 0, passed: 0 };
    entry.n++;
    entry.passed += liveVerdict.get(t.trajectoryId) ? 1 : 0;
    byVersion.set(t.lineage.policyVersion ?? 0, entry);
  }
  const curve = reports.get('learning-curve')!;
  const points = markLabels(curve.html, 'pass_rate_by_version', 'policy version').sort((a, b) => Number(a['policy version']) - Number(b['policy version']));
  const sqlRows = curve.results.find((c) => c.id === 'pass_rate_by_version')!.records;
  assert.deepEqual(
    points.map((p) => [p['policy version'], round(Number(p['pass rate']))]),
    sqlRows.map((r) => [r.policy_version, round(Number(r.pass_rate))]),
    'the chart draws the SQL result',
  );
  assert.deepEqual(
    points.map((p) => [p['policy version'], round(Number(p['pass rate']))]),
    [...byVersion].sort(([a], [b]) => a - b).map(([version, { n, passed }]) => [version, round(passed / n)]),
    'the chart agrees with the topics (re-scored verdicts left out)',
  );

  // Reward distribution bars count the reward records.
  const bars = markLabels(reports.get('rewards')!.html, 'reward_distribution', 'reward');
  const counts = new Map<number, number>();
  for (const r of rewards) counts.set(r.reward, (counts.get(r.reward) ?? 0) + 1);
  assert.deepEqual(bars.map((b) => [b.reward, b.rewards]).sort(), [...counts].sort());

  // Episode lengths from the topic.
  const lengths = new Map<number, number>();
  for (const t of trajectories) lengths.set(t.steps.length, (lengths.get(t.steps.length) ?? 0) + 1);
  const histogram = markLabels(reports.get('tool-mix')!.html, 'steps_per_trajectory', 'steps in the episode');
  assert.deepEqual(histogram.map((b) => [b['steps in the episode'], b.trajectories]).sort(), [...lengths].sort());

  // The disagreement chart counts exactly the flipped verdicts.
  const disagreement = reports.get('verifier-disagreement')!.results.find((c) => c.id === 'disagreement_by_pair')!.records;
  const disagreed = disagreement.filter((r) => r.verdicts === 'a passes only' || r.verdicts === 'b passes only').reduce((sum, r) => sum + Number(r.trajectories), 0);
  assert.equal(disagreed, flipped.size);
  assert.equal(disagreement.reduce((sum, r) => sum + Number(r.trajectories), 0), 6);
  const disagreementBars = markLabels(reports.get('verifier-disagreement')!.html, 'disagreement_by_pair', 'trajectories');
  assert.equal(disagreementBars.length, disagreement.length, 'one bar segment per row');
});
