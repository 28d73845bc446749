import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { chromium, type Page } from 'playwright-core';
import { repoRoot } from '../../cli/paths.js';
import { LocalCheckpointStore } from '../../connectors/checkpoints/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { startDashboard } from '../../dashboard/index.js';
import { runLoop } from '../../pipelines/loop/index.js';
import { imageFor } from '../../stack/index.js';
import { parsePrometheusText, type MetricFamily } from '../fixtures/prometheus.js';
import { nowIso, type DeadLetter } from '../../schemas/index.js';
import { ensureStack, freshContext, sendRaw, tempDir, eventually } from './harness.js';

/** Debian's chromium (scripts/setup.sh installs it): playwright's own download cannot reach its host here. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SCREENSHOT = join(repoRoot(), '.trialrun', 'screenshots', 'dashboard.png');

const pool = new DockerSandboxPool();
before(ensureStack, { timeout: 900_000 });
after(() => pool.close());

/** The landed count the page shows for a stage (read from the DOM, as a user sees it). */
const landedOnPage = (page: Page, stage: string): Promise<number> =>
  page.evaluate((name) => Number(document.querySelector(`#stages tr[data-stage="${name}"] td:nth-child(3)`)?.textContent ?? Number.NaN), stage);

/** Sum of a family's samples named `name` whose labels include `labels`. */
const total = (families: ReadonlyMap<string, MetricFamily>, family: string, name: string, labels: Record<string, string>): number =>
  (families.get(family)?.samples ?? []).filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((sum, s) => sum + s.value, 0);

test('the dashboard follows a real small loop in a browser: page, live numbers, rendered charts, /metrics', { timeout: 900_000 }, async () => {
  assert.ok(existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}; scripts/setup.sh installs Debian's chromium (or set CHROMIUM_PATH)`);
  // kafkajs: with the confluent client the dashboard computed no consumer lag while a loop ran in its own
  // process (tasks queued stayed unknown for a minute after the loop); open until that is understood.
  const context = await freshContext('dashboard', { client: 'kafkajs' });
  const dataDir = tempDir('dashboard');
  const runId = randomUUID();
  const dashboard = await startDashboard(context, { dataDir, port: 0, runId, pool, refreshMs: 500 });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => void (message.type() === 'error' && pageErrors.push(message.text())));
    page.on('response', (response) => void (response.status() >= 400 && pageErrors.push(`${response.status()} for ${response.url()}`)));
    await page.goto(dashboard.url);
    await page.waitForFunction(() => (window as unknown as { trialrunDashboard?: { snapshots: number } }).trialrunDashboard!.snapshots >= 1, null, { timeout: 60_000 });
    assert.equal(await page.textContent('#run-id'), runId);
    const before = await landedOnPage(page, 'trajectories');
    assert.equal(before, 0);

    // A dead letter whose message is markup: the page shows it as text, with its reason counted.
    const markup = '<img src=x onerror="window.injected = true">';
    const letter: DeadLetter = {
      processor: 'verifier', sourceTopic: context.names.name('trajectories'), partition: 0, offset: '41', key: null, value: null, headers: {},
      error: { name: 'DecodeError', message: markup, retriable: false, stage: 'decode' }, attempts: 1, failedAt: nowIso(),
    };
    await sendRaw(context, 'deadLetters', [{ key: letter.sourceTopic, value: await context.serde.encode('deadLetters', letter) }]);
    await page.waitForFunction(() => document.querySelector('#dead-letters-total')?.textContent === '1', null, { timeout: 120_000, polling: 250 });
    assert.deepEqual(
      await page.$$eval('#dead-letter-reasons tbody tr td', (cells) => cells.map((cell) => cell.textContent)),
      ['verifier', 'decode', 'DecodeError', '1'],
    );
    assert.equal(await page.$eval('#dead-letters tbody tr td:nth-child(5)', (cell) => cell.textContent), markup);
    assert.equal(await page.evaluate(() => document.querySelector('#dead-letters img') === null && !('injected' in window)), true, 'agent text never becomes markup');

    // The loop test's smallest configuration, on fresh topics; the dashboard watches it from the same process.
    const loop = runLoop(context, {
      taskFile: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'),
      dataDir,
      pool,
      imageFor,
      checkpoints: new LocalCheckpointStore(tempDir('checkpoints')),
      runId,
      limitTasks: 2,
      groupSize: 2,
      batchSize: 2,
      maxTurns: 8,
      rolloutWorkers: 2,
    });
    // The count rises on the open page while the loop runs: pushed by /events, no reload.
    await page.waitForFunction(
      (floor) => Number(document.querySelector('#stages tr[data-stage="trajectories"] td:nth-child(3)')?.textContent) > floor,
      before,
      { timeout: 600_000, polling: 250 },
    );
    const during = await page.evaluate(() => (window as unknown as { trialrunDashboard: { snapshots: number } }).trialrunDashboard.snapshots);
    const summary = await loop;
    assert.equal(summary.trajectories, 4);

    await dashboard.refresh();
    await page.waitForFunction(
      ([trajectories, versions]) => {
        const state = (window as unknown as { trialrunDashboard: { views: Record<string, { data(name: string): unknown[] }> } }).trialrunDashboard;
        const landed = Number(document.querySelector('#stages tr[data-stage="rewards"] td:nth-child(3)')?.textContent);
        return landed === trajectories && state.views.passRate!.data('table').length === versions;
      },
      [summary.trajectories, summary.byPolicyVersion.length] as const,
      { timeout: 120_000, polling: 250 },
    );
    assert.ok((await page.evaluate(() => (window as unknown as { trialrunDashboard: { snapshots: number } }).trialrunDashboard.snapshots)) > during, 'more snapshots arrived as records landed');
    assert.equal(await landedOnPage(page, 'trajectories'), summary.trajectories);
    assert.equal(await landedOnPage(page, 'verifications'), summary.trajectories);

    // The page shows the snapshot after the one that saw the last commits (every 2 s): wait for it, lag
    // included, before reading the charts.
    const inFlight = (field: string) => page.textContent(`#in-flight [data-field="${field}"]`);
    await eventually('no tasks queued and nothing awaiting reward', async () => (await inFlight('tasksQueued')) === '0' && (await inFlight('awaitingReward')) === '0', 60_000, 500).catch(async (error: unknown) => {
      assert.fail(`${String(error)}: tasksQueued ${await inFlight('tasksQueued')}, awaitingReward ${await inFlight('awaitingReward')}`);
    });

    // The charts' data is the run's, and Vega drew a mark for each row.
    const charts = await page.evaluate(() => {
      type PassRow = { version: number; episodes: number; passRate: number; low: number; high: number };
      const { views } = (window as unknown as { trialrunDashboard: { views: Record<string, { data(name: string): PassRow[] }> } }).trialrunDashboard;
      const marks = (selector: string): number => document.querySelectorAll(selector).length;
      return {
        passRate: views.passRate!.data('table').map((r) => ({ version: r.version, episodes: r.episodes, passRate: r.passRate, low: r.low, high: r.high })),
        learnerRows: views.learner!.data('table').length,
        throughputRows: views.throughput!.data('table').length,
        passPoints: marks('#chart-pass-rate svg .mark-symbol.role-mark path'),
        passRules: marks('#chart-pass-rate svg .mark-rule.role-mark line'),
        rewardPoints: marks('#chart-reward svg .mark-symbol.role-mark path'),
        throughputLines: marks('#chart-throughput svg .mark-line.role-mark path'),
        poolBars: marks('#chart-pool svg .mark-rect.role-mark path'),
        lagBars: marks('#chart-lag svg .mark-rect.role-mark path'),
      };
    });
    assert.deepEqual(
      charts.passRate.map(({ version, episodes, passRate }) => ({ version, episodes, passRate })),
      summary.byPolicyVersion.map((row) => ({ version: row.policyVersion, episodes: row.trajectories, passRate: row.passRate })),
      'pass rate per policy version agrees with the loop summary',
    );
    for (const row of charts.passRate) assert.ok(row.low <= row.passRate && row.passRate <= row.high, `the interval of v${row.version} holds its rate`);
    assert.equal(charts.passPoints, summary.byPolicyVersion.length, 'one point per policy version');
    assert.equal(charts.passRules, summary.byPolicyVersion.length, 'one interval per policy version');
    assert.equal(charts.rewardPoints, summary.byPolicyVersion.length);
    assert.equal(charts.learnerRows, summary.checkpoints);
    assert.ok(charts.throughputRows > 0 && charts.throughputLines > 0, 'the throughput chart drew lines');
    assert.equal(charts.poolBars, 4, 'busy, idle, creating, destroying');
    assert.ok(charts.lagBars > 0, 'a bar per consumer group and topic');
    const processorRows = await page.$$eval('#processors tbody tr', (rows) => rows.map((row) => row.querySelector('td')?.textContent));
    assert.ok(processorRows.includes('rollout-worker') && processorRows.includes('verifier'), `processors of this process are listed: ${processorRows.join(', ')}`);
    assert.equal(await page.textContent('#dead-letters-total'), '1', 'the loop added none');
    assert.deepEqual(pageErrors, [], 'the page ran without errors');

    // /metrics: the processors' counters and latencies, in a format Prometheus reads.
    const response = await fetch(`${dashboard.url}metrics`);
    assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const families = parsePrometheusText(await response.text());
    const worker = { processor: 'rollout-worker' };
    assert.equal(total(families, 'trialrun_processor_records_in_total', 'trialrun_processor_records_in_total', worker), summary.tasks, 'each task taken once');
    assert.equal(total(families, 'trialrun_processor_records_out_total', 'trialrun_processor_records_out_total', worker), summary.trajectories);
    assert.equal(total(families, 'trialrun_processor_records_out_total', 'trialrun_processor_records_out_total', { processor: 'verifier' }), summary.trajectories, 'one verification per trajectory');
    assert.equal(total(families, 'trialrun_processor_latency_seconds', 'trialrun_processor_latency_seconds_count', worker), summary.tasks);
    assert.equal(total(families, 'trialrun_processor_dead_letters_total', 'trialrun_processor_dead_letters_total', worker), 0);
    assert.equal(families.get('trialrun_sandbox_pool_sandboxes')?.type, 'gauge');
    assert.equal(total(families, 'trialrun_sandbox_pool_sandboxes', 'trialrun_sandbox_pool_sandboxes', { state: 'busy' }), 0, 'every sandbox released');

    // Only the page's own files are served, and only read.
    for (const path of ['/nope', '/%2e%2e/package.json', '/dashboard/server.ts', '/vendor/../../package.json']) {
      assert.equal((await fetch(new URL(path, dashboard.url))).status, 404, `${path} is not served`);
    }
    const post = await fetch(`${dashboard.url}metrics`, { method: 'POST' });
    assert.equal(post.status, 405);

    mkdirSync(join(repoRoot(), '.trialrun', 'screenshots'), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    assert.ok(statSync(SCREENSHOT).size > 10_000);
    console.log(`# dashboard screenshot: ${SCREENSHOT}`);
  } finally {
    await browser.close();
    await dashboard.close();
  }
});
