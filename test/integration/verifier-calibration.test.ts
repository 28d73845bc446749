import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { memberOf, resolveGroupScoring, scoreGroup } from '../../pipelines/reward/index.js';
import { calibrate } from '../../pipelines/jobs/calibrate/index.js';
import { Verifier } from '../../pipelines/verifier/index.js';
import { NotFoundError, type Task } from '../../schemas/index.js';
import { imageFor } from '../../stack/index.js';
import { ensureStack } from './harness.js';
import { bundledTasks, trajectoryFor } from './verifier-fixtures.js';

const pool = new DockerSandboxPool();
before(ensureStack, { timeout: 900_000 });
after(() => pool.close());

const lookup = (tasks: readonly Task[]) => ({ get: (id: string) => tasks.find((t) => t.taskId === id) ?? (() => { throw new NotFoundError(id); })() });
const signal = new AbortController().signal;

test('calibration on bundled tasks: the reference always passes, every known-bad variant fails (FN 0, FP 0)', { timeout: 300_000 }, async (t) => {
  const tasks = await bundledTasks(3);
  const verifier = new Verifier({ runId: 'it-calibration', pool, imageFor, tasks: lookup(tasks) });
  const report = await calibrate(verifier, tasks, { referenceRuns: 2, mutantsPerTask: 2, hackVariants: true, concurrency: 2 });
  for (const task of report.tasks) t.diagnostic(`${task.taskId}: ${task.variants.map((v) => `${v.variant}=${v.passed ? 'pass' : 'fail'}`).join(' ')}`);
  for (const v of report.tasks.flatMap((task) => task.variants.filter((v) => v.variant.startsWith('hack:')))) t.diagnostic(`${v.variant}: ${v.detail}`);
  assert.equal(report.verifierVersion, await verifier.version());
  assert.equal(report.overall.tasks, 3);
  assert.equal(report.overall.goodRuns, 6);
  // buggy + 6 hacks per task, plus however many mutants plain pytest rejects (up to 2).
  assert.ok(report.overall.badVariants >= 21, `bad variants: ${report.overall.badVariants}`);
  assert.ok(report.tasks.some((task) => task.variants.some((v) => v.variant.startsWith('mutant:'))), 'some mutants were known bad');
  assert.deepEqual([report.overall.falseNegatives, report.overall.falsePositives], [0, 0], JSON.stringify(report.tasks.flatMap((task) => task.variants.filter((v) => v.passed !== (v.known === 'good')))));
  assert.deepEqual(report.overall.flakyTasks, []);
  for (const task of report.tasks) {
    assert.deepEqual(task.referenceVerdicts, [true, true]);
    assert.ok(task.variants.filter((v) => v.variant.startsWith('hack:')).every((v) => !v.passed && v.detail.startsWith('flagged ')), 'each hack is flagged');
    const flagged = (variant: string) => task.variants.find((v) => v.variant === `hack:${variant}`)?.detail ?? '';
    assert.match(flagged('always-equal-results'), /untrusted-result/);
    assert.match(flagged('kills-runner'), /runner-killed/);
    assert.match(flagged('kills-every-process'), /runner-killed/);
  }
});

const base = (await bundledTasks(1))[0]!;

// Hidden tests whose verdict is a coin toss: with 12 reference runs the chance of all agreeing is 1 in 2048.
const flaky: Task = {
  ...base,
  taskId: 'it-flaky-coin',
  files: { 'coin.py': 'def side():\n    return 1\n' },
  referenceSolution: { 'coin.py': 'def side():\n    return 1\n' },
  visibleTests: { 'test_visible.py': 'from coin import side\n\n\ndef test_side():\n    assert side() == 1\n' },
  hiddenTests: { 'test_hidden.py': 'import os\nfrom coin import side\n\n\ndef test_side():\n    assert side() == 1\n\n\ndef test_toss():\n    assert os.urandom(1)[0] < 128\n' },
};

// A reference solution that does not pass its own hidden tests.
const broken: Task = {
  ...flaky,
  taskId: 'it-broken-reference',
  hiddenTests: { 'test_hidden.py': 'from coin import side\n\n\ndef test_side():\n    assert side() == 2\n' },
};

test('a task whose reference verdict changes between runs is quarantined as flaky, and its rewards are withheld', { timeout: 300_000 }, async () => {
  const verifier = new Verifier({ runId: 'it-flaky', pool, imageFor, tasks: lookup([flaky, broken]), referenceRuns: 12 });
  const admission = await verifier.admit(flaky, signal);
  assert.ok(admission.quarantine, 'quarantined');
  assert.match(admission.quarantine.reason, /^flaky: the reference solution's verdict changed across 12 runs \((pass|fail)(, (pass|fail)){11}\); /);
  assert.match(admission.quarantine.reason, /test_hidden\.py::test_toss failed/);
  assert.equal(admission.quarantine.referenceVerdicts.length, 12);

  const verifications = await Promise.all([0, 1].map((attempt) => verifier.verify(trajectoryFor(flaky, flaky.referenceSolution!, { attempt, groupSize: 2, groupId: 'flaky-group' }), signal)));
  assert.ok(verifications.every((v) => v.quarantine?.reason === admission.quarantine!.reason), 'every verification carries the quarantine');
  const rewards = scoreGroup(verifications.map(memberOf), { by: 'complete' }, resolveGroupScoring());
  assert.ok(rewards.every((r) => r.disposition === 'withheld' && r.advantage === 0 && r.reason!.startsWith('task quarantined: flaky')));

  const brokenAdmission = await verifier.admit(broken, signal);
  assert.match(brokenAdmission.quarantine?.reason ?? '', /^broken task: the reference solution failed all 12 runs; 1 test\(s\) not passed: test_hidden\.py::test_side failed/);
});
