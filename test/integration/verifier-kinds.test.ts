import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { repoRoot } from '../../cli/paths.js';
import { LocalTreeStore, storeLargeTrees } from '../../connectors/artifacts/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { createRewardProcessor } from '../../pipelines/reward/index.js';
import { GlobalTable } from '../../pipelines/runtime/index.js';
import { publishTasks } from '../../pipelines/jobs/task-job/index.js';
import { calibrate } from '../../pipelines/jobs/calibrate/index.js';
import { createVerifierProcessor, Verifier, type Checked } from '../../pipelines/verifier/index.js';
import { NotFoundError, type FileTree, type Reward, type Task, type Verification, type VerificationSpec } from '../../schemas/index.js';
import { imageFor } from '../../stack/index.js';
import { ensureStack, eventually, freshContext, readAll, sendRaw, tempDir } from './harness.js';
import { bundledTasks, trajectoryFor, writeStep } from './verifier-fixtures.js';

// One task per verification kind, each run in real grading sandboxes: the reference must pass, known-bad
// final files must fail, and each kind's failure modes must say what went wrong.
const pool = new DockerSandboxPool();
before(ensureStack, { timeout: 900_000 });
after(() => pool.close());

const base = (await bundledTasks(1))[0]!;
const signal = new AbortController().signal;

function taskOf(taskId: string, fields: { files: FileTree; visibleTests?: FileTree; hiddenTests?: FileTree; referenceSolution: FileTree | null; verification?: VerificationSpec }): Task {
  return { ...base, taskId, title: taskId, visibleTests: {}, hiddenTests: {}, ...fields };
}

const lookup = (tasks: readonly Task[]) => ({ get: (id: string) => tasks.find((t) => t.taskId === id) ?? (() => { throw new NotFoundError(id); })() });
const verifierFor = (tasks: readonly Task[], extra: { referenceRuns?: number; trees?: LocalTreeStore } = {}) =>
  new Verifier({ runId: 'it-kinds', pool, imageFor, tasks: lookup(tasks), referenceRuns: extra.referenceRuns ?? 1, timeoutMs: 15_000, trees: extra.trees ?? null });

/** Verifies one final tree through the whole path a trajectory takes (admission included). */
async function verdict(verifier: Verifier, task: Task, finalFiles: FileTree, options: Parameters<typeof trajectoryFor>[2] = {}): Promise<Verification> {
  return verifier.verify(trajectoryFor(task, finalFiles, options), signal);
}

const outcomes = (v: Pick<Verification, 'tests'>) => Object.fromEntries(v.tests.map((t) => [t.id, t.outcome]));

// -- tests / pytest: subfolders, FAIL_TO_PASS and PASS_TO_PASS ------------------------------------------------

const CALC_BUGGY = 'def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n';
const CALC_FIXED = 'def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n';
const VISIBLE_CALC = 'from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n';
const HIDDEN_CALC = 'from calc import add\n\n\nclass TestAdd:\n    def test_add(self):\n        assert add(1, 2) == 3\n\n    def test_zero(self):\n        assert add(0, 0) == 0\n';

const swe = taskOf('it-kinds-pytest-subfolders', {
  files: { 'calc.py': CALC_BUGGY, 'tests/test_calc.py': VISIBLE_CALC },
  visibleTests: {},
  hiddenTests: { 'tests/hidden/test_add.py': HIDDEN_CALC },
  referenceSolution: { 'calc.py': CALC_FIXED },
  verification: {
    check: { kind: 'tests', runner: 'pytest', failToPass: ['tests/hidden/test_add.py::TestAdd::test_add'], passToPass: ['tests/hidden/test_add.py::TestAdd::test_zero'] },
  },
});

test('tests/pytest: node ids in subfolders, FAIL_TO_PASS and PASS_TO_PASS decide; a missing listed id fails', { timeout: 300_000 }, async (t) => {
  const verifier = verifierFor([swe]);
  const fixed = await verdict(verifier, swe, { ...swe.files, 'calc.py': CALC_FIXED });
  t.diagnostic(`fixed: ${JSON.stringify(outcomes(fixed))} ${fixed.failureDetail ?? ''}`);
  assert.equal(fixed.passed, true, JSON.stringify(fixed));
  assert.deepEqual(outcomes(fixed), { 'tests/hidden/test_add.py::TestAdd::test_add': 'passed', 'tests/hidden/test_add.py::TestAdd::test_zero': 'passed' });
  assert.deepEqual([fixed.checkKind, fixed.score, fixed.testsTotal, fixed.quarantine], ['tests', 1, 2, null]);

  const buggy = await verdict(verifier, swe, swe.files);
  assert.deepEqual([buggy.passed, buggy.score, buggy.fractionPassed], [false, 0, 0.5]);
  assert.equal(outcomes(buggy)['tests/hidden/test_add.py::TestAdd::test_add'], 'failed');

  // An id the report lacks fails, whatever else passed.
  const admitted = await verifier.admit(swe, signal);
  const missing: Checked = await verifier.check(swe, { ...swe.files, 'calc.py': CALC_FIXED }, [...admitted.expected, 'tests/hidden/test_add.py::TestAdd::test_absent'], signal);
  assert.equal(missing.passed, false);
  assert.equal(missing.tests.find((r) => r.id.endsWith('test_absent'))?.outcome, 'missing');

  // A spec listing an id the pristine task does not have is a broken task, and says which id.
  const misnamed: Task = { ...swe, taskId: 'it-kinds-pytest-misnamed', verification: { check: { kind: 'tests', runner: 'pytest', failToPass: ['tests/test_add.py::test_add'], passToPass: [] } } };
  const broken = await verdict(verifierFor([misnamed]), misnamed, { ...swe.files, 'calc.py': CALC_FIXED });
  assert.match(broken.quarantine?.reason ?? '', /broken task: the spec lists 1 test id\(s\) the pristine task does not have: tests\/test_add\.py::test_add/);

  // Without lists, every collected pristine test must pass (the visible one in tests/ included).
  const all: Task = { ...swe, taskId: 'it-kinds-pytest-all', verification: undefined, visibleTests: { 'tests/test_calc.py': VISIBLE_CALC } };
  const everything = await verdict(verifierFor([all]), all, { 'calc.py': CALC_FIXED });
  assert.equal(everything.passed, true, JSON.stringify(everything));
  assert.deepEqual(Object.keys(outcomes(everything)).sort(), ['tests/hidden/test_add.py::TestAdd::test_add', 'tests/hidden/test_add.py::TestAdd::test_zero', 'tests/test_calc.py::test_sub']);
});

test('a test file changed relative to the task, with no tool call to show it (a shell did it), is flagged and scores 0', { timeout: 300_000 }, async () => {
  const verifier = verifierFor([swe]);
  const rigged = await verdict(verifier, swe, { ...swe.files, 'calc.py': CALC_FIXED, 'tests/test_calc.py': 'def test_sub():\n    assert True\n' }, { steps: [] });
  assert.equal(rigged.passed, false);
  assert.equal(rigged.score, 0);
  assert.deepEqual((rigged.hacks ?? []).map((h) => [h.kind, h.path, h.source]), [['test-edited', 'tests/test_calc.py', 'files']]);
  const deleted = await verdict(verifier, swe, { 'calc.py': CALC_FIXED });
  assert.deepEqual((deleted.hacks ?? []).map((h) => [h.kind, h.path]), [['test-deleted', 'tests/test_calc.py']]);
});

// -- tests / command: a second runner's JUnit ---------------------------------------------------------------

const UNITTEST_JUNIT = readFileSync(join(repoRoot(), 'test', 'fixtures', 'unittest_junit.py'), 'utf8');
const HIDDEN_UNITTEST = 'import unittest\n\nfrom calc import add\n\n\nclass TestAdd(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n\n    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n';

const commandTask = taskOf('it-kinds-command', {
  files: { 'calc.py': CALC_BUGGY },
  hiddenTests: { 'checks/test_add.py': HIDDEN_UNITTEST, 'grading/unittest_junit.py': UNITTEST_JUNIT },
  referenceSolution: { 'calc.py': CALC_FIXED },
  verification: {
    check: { kind: 'tests', runner: 'command', command: ['python3', 'grading/unittest_junit.py', 'reports/junit.xml', 'checks'], junitPath: 'reports/junit.xml', failToPass: ['test_add.TestAdd::test_add'], passToPass: ['test_add.TestAdd::test_zero'] },
  },
});

test('tests/command: any command writing JUnit XML (unittest here), ids from classname::name; a missing id and a planted report fail', { timeout: 300_000 }, async () => {
  const verifier = verifierFor([commandTask]);
  const fixed = await verdict(verifier, commandTask, { 'calc.py': CALC_FIXED });
  assert.equal(fixed.passed, true, JSON.stringify(fixed));
  assert.deepEqual(outcomes(fixed), { 'test_add.TestAdd::test_add': 'passed', 'test_add.TestAdd::test_zero': 'passed' });
  const buggy = await verdict(verifier, commandTask, commandTask.files);
  assert.deepEqual([buggy.passed, buggy.failure, outcomes(buggy)['test_add.TestAdd::test_add']], [false, null, 'failed']);

  const absent = await verifier.check(commandTask, { 'calc.py': CALC_FIXED }, ['test_add.TestAdd::test_add', 'test_add.TestAdd::test_nope'], signal);
  assert.deepEqual([absent.passed, absent.tests.find((r) => r.id === 'test_add.TestAdd::test_nope')?.outcome], [false, 'missing']);

  const forged = '<testsuites><testsuite><testcase classname="test_add.TestAdd" name="test_add"/><testcase classname="test_add.TestAdd" name="test_zero"/></testsuite></testsuites>';
  const planted = await verdict(verifier, commandTask, { 'calc.py': CALC_BUGGY, 'reports/junit.xml': forged });
  assert.equal(planted.passed, false);
  assert.ok((planted.hacks ?? []).some((h) => h.kind === 'fake-report'), JSON.stringify(planted.hacks));
  // The same report behind a symlink on the report's way.
  const linked = await verdict(verifier, commandTask, { 'calc.py': CALC_BUGGY, 'forged/junit.xml': forged }, { extras: { escapedPaths: [], symlinks: [{ path: 'reports', target: 'forged', pathEscaped: false, targetEscaped: false }] } });
  assert.equal(linked.passed, false);
  assert.ok((linked.hacks ?? []).some((h) => h.kind === 'fake-report' && /a symlink at or above reports\/junit\.xml/.test(h.evidence)), JSON.stringify(linked.hacks));

  // A command that writes no report fails with the command's end as evidence.
  const silent: Task = { ...commandTask, taskId: 'it-kinds-command-silent', verification: { check: { kind: 'tests', runner: 'command', command: ['bash', '-c', 'echo no report here >&2; exit 3'], junitPath: 'reports/junit.xml', failToPass: [], passToPass: [] } } };
  const none = await verdict(verifierFor([silent], { referenceRuns: 0 }), silent, { 'calc.py': CALC_FIXED });
  assert.equal(none.failure, 'no-report');
  assert.match(none.failureDetail ?? '', /wrote no JUnit report at reports\/junit\.xml; the command exited with status 3: no report here/);
});

// -- script: the Harbor reward-file contract ------------------------------------------------------------------

// The grader gives partial credit: the share of cases the agent's solve.py gets right.
const GRADER = [
  'import json, os, subprocess',
  'cases = [(2, 4), (3, 9), (4, 16), (5, 25)]',
  'right = sum(subprocess.run(["python3", "solve.py", str(x)], capture_output=True, text=True).stdout.strip() == str(y) for x, y in cases)',
  'open(os.path.join(os.environ["TRIALRUN_REWARD_DIR"], "reward.txt"), "w").write(str(right / len(cases)))',
  '',
].join('\n');
const SQUARE = 'import sys\nx = int(sys.argv[1])\nprint(x * x)\n';
const HALF_RIGHT = 'import sys\nx = int(sys.argv[1])\nprint(x * x if x % 2 == 0 else 0)\n';

const scriptTask = (taskId: string, command: string[], reward?: VerificationSpec['reward'], passThreshold?: number): Task =>
  taskOf(taskId, {
    files: { 'solve.py': 'print(0)\n' },
    hiddenTests: { 'grader/grade.py': GRADER },
    referenceSolution: { 'solve.py': SQUARE },
    verification: { check: { kind: 'script', command, ...(passThreshold === undefined ? {} : { passThreshold }) }, ...(reward ? { reward } : {}) },
  });

test('script: reward.txt and reward.json give partial credit; garbage, out of range and no reward file fail with why', { timeout: 300_000 }, async () => {
  const graded = scriptTask('it-kinds-script', ['python3', 'grader/grade.py'], { shape: 'fraction' });
  const verifier = verifierFor([graded]);
  const full = await verdict(verifier, graded, { 'solve.py': SQUARE });
  assert.deepEqual([full.passed, full.score, full.checkKind, full.fractionPassed], [true, 1, 'script', 1], JSON.stringify(full));
  // A reward.txt among the agent's files is just a file: the reward folder is made fresh, outside the workspace.
  const half = await verdict(verifier, graded, { 'solve.py': HALF_RIGHT, 'reward.txt': '1' });
  assert.deepEqual([half.passed, half.score, half.tests[0]?.message], [false, 0.5, 'reward 0.5 from reward.txt (pass at 1)']);

  const cases: Array<[string, string, RegExp]> = [
    ['json', 'printf \'{"reward": 0.25, "cases": 4}\' > "$TRIALRUN_REWARD_DIR/reward.json"', /^$/],
    ['garbage', 'echo "all good!" > "$TRIALRUN_REWARD_DIR/reward.txt"', /reward\.txt holds "all good!", not one number/],
    ['out-of-range', 'echo 1.5 > "$TRIALRUN_REWARD_DIR/reward.txt"', /reward\.txt holds 1\.5, outside \[0, 1\]/],
    ['missing', 'echo grading crashed >&2; exit 2', /wrote neither reward\.txt nor reward\.json into \$TRIALRUN_REWARD_DIR; the command exited with status 2: grading crashed/],
  ];
  for (const [name, script, why] of cases) {
    const task = scriptTask(`it-kinds-script-${name}`, ['bash', '-c', script], { shape: 'fraction' }, 0.2);
    const v = await verdict(verifierFor([task], { referenceRuns: 0 }), task, { 'solve.py': SQUARE });
    if (name === 'json') {
      assert.deepEqual([v.passed, v.score, v.failure], [true, 0.25, null], JSON.stringify(v));
      continue;
    }
    assert.deepEqual([v.passed, v.score, v.failure], [false, 0, 'no-report'], name);
    assert.match(v.failureDetail ?? '', why, name);
  }
});

// -- output: checks on produced files and stdout -----------------------------------------------------------------

const REPORT_SCRIPT = [
  'import csv, json, os',
  'rows = [("b", 2), ("a", 1.5)]',
  'os.makedirs("out", exist_ok=True)',
  'with open("out/summary.csv", "w", newline="") as f:',
  '    w = csv.writer(f); w.writerow(["name", "total"]); w.writerows(rows)',
  'json.dump({"version": 2, "rows": len(rows)}, open("out/meta.json", "w"))',
  'open("out/config.yaml", "w").write("version: 2\\nname: summary\\n")',
  'open("README.md", "w").write("# Summary\\n\\n## Usage\\n\\n```\\npython3 report.py\\n```\\n")',
  'print("wrote 2 rows")',
  '',
].join('\n');
const WRONG_SCRIPT = REPORT_SCRIPT.replace('("a", 1.5)', '("a", 9)').replace('version: 2', 'version: two');
const PEEKING_SCRIPT = 'import os, shutil\nos.makedirs("out", exist_ok=True)\nshutil.copy("expected/summary.csv", "out/summary.csv")\n';

const SCHEMA = { type: 'object', required: ['version'], properties: { version: { type: 'integer' } } };
const outputTask = taskOf('it-kinds-output', {
  files: { 'report.py': 'print("todo")\n' },
  hiddenTests: { 'expected/summary.csv': 'name,total\na,1.50\nb,2\n' },
  referenceSolution: { 'report.py': REPORT_SCRIPT },
  verification: {
    check: {
      kind: 'output',
      command: ['python3', 'report.py'],
      checks: [
        { type: 'content', stdout: true, expected: 'wrote 2 rows' },
        { type: 'csv', path: 'out/summary.csv', expectedFile: 'expected/summary.csv' },
        { type: 'json-schema', path: 'out/meta.json', schema: SCHEMA },
        { type: 'yaml-schema', path: 'out/config.yaml', schema: SCHEMA },
        { type: 'markdown', path: 'README.md', headings: ['# Summary', '## Usage'], requireCodeBlock: true },
      ],
    },
    reward: { shape: 'fraction' },
  },
});

test('output: content, CSV, JSON Schema, YAML and Markdown checks pass and fail one by one; expected files never enter the sandbox', { timeout: 300_000 }, async () => {
  const verifier = verifierFor([outputTask]);
  const good = await verdict(verifier, outputTask, { 'report.py': REPORT_SCRIPT });
  assert.equal(good.passed, true, JSON.stringify(good.tests));
  assert.deepEqual(good.tests.map((r) => r.id), ['check[0]:content:stdout', 'check[1]:csv:out/summary.csv', 'check[2]:json-schema:out/meta.json', 'check[3]:yaml-schema:out/config.yaml', 'check[4]:markdown:README.md']);
  assert.deepEqual([good.score, good.checkKind], [1, 'output']);

  const wrong = await verdict(verifier, outputTask, { 'report.py': WRONG_SCRIPT });
  assert.deepEqual(outcomes(wrong), { 'check[0]:content:stdout': 'passed', 'check[1]:csv:out/summary.csv': 'failed', 'check[2]:json-schema:out/meta.json': 'passed', 'check[3]:yaml-schema:out/config.yaml': 'failed', 'check[4]:markdown:README.md': 'passed' });
  assert.deepEqual([wrong.passed, wrong.score], [false, 0.6]);
  assert.match(wrong.tests[1]!.message ?? '', /not among the expected rows/);
  assert.match(wrong.tests[3]!.message ?? '', /version must be integer/);

  const peeking = await verdict(verifier, outputTask, { 'report.py': PEEKING_SCRIPT });
  assert.equal(peeking.passed, false);
  assert.equal(peeking.failure, 'crash', 'the expected file is not there to copy, so the script fails');
  assert.match(peeking.failureDetail ?? '', /FileNotFoundError/);

  const nothing = await verdict(verifier, outputTask, outputTask.files);
  assert.match(nothing.tests[1]!.message ?? '', /out\/summary\.csv was not produced/);
});

test('calibration works for every kind: the reference passes, the starting files fail', { timeout: 600_000 }, async () => {
  const tasks = [swe, commandTask, scriptTask('it-kinds-script-cal', ['python3', 'grader/grade.py']), outputTask];
  const report = await calibrate(verifierFor(tasks), tasks, { referenceRuns: 1, mutantsPerTask: 0, hackVariants: false, concurrency: 1 });
  assert.equal(report.overall.tasks, 4, JSON.stringify(report.tasks.map((t) => t.skipped)));
  assert.deepEqual([report.overall.falseNegatives, report.overall.falsePositives], [0, 0], JSON.stringify(report.tasks.flatMap((t) => t.variants)));
  assert.equal(report.overall.badVariants, 4);
});

test('a verification takes this long per kind (median of 3, diagnostics only)', { timeout: 600_000 }, async (t) => {
  const cases: Array<[string, Task, FileTree]> = [
    ['tests/pytest', swe, { ...swe.files, 'calc.py': CALC_FIXED }],
    ['tests/command', commandTask, { 'calc.py': CALC_FIXED }],
    ['script', scriptTask('it-kinds-script-time', ['python3', 'grader/grade.py']), { 'solve.py': SQUARE }],
    ['output', outputTask, { 'report.py': REPORT_SCRIPT }],
  ];
  for (const [kind, task, files] of cases) {
    const verifier = verifierFor([task], { referenceRuns: 0 });
    const expected = (await verifier.admit(task, signal)).expected;
    const times: number[] = [];
    for (let run = 0; run < 3; run++) {
      const checked = await verifier.check(task, files, expected, signal);
      assert.equal(checked.passed, true, kind);
      times.push(checked.durationMs);
    }
    t.diagnostic(`${kind}: median ${Math.round(times.sort((a, b) => a - b)[1]!)} ms (${times.map(Math.round).join(', ')})`);
  }
});

test('through Kafka: claim-checked task and final files, fractional rewards and their group advantages', { timeout: 300_000 }, async () => {
  const context = await freshContext('verifier-kinds');
  const store = new LocalTreeStore(tempDir('kinds-artifacts'));
  const graded = scriptTask('it-kinds-fraction', ['python3', 'grader/grade.py'], { shape: 'fraction' });
  // Every tree in the store: the record carries references only.
  const stored = await storeLargeTrees(graded, store, 0);
  assert.deepEqual([stored.hiddenTests, stored.stored?.hiddenTests?.files], [{}, 1]);
  await publishTasks(context.kafka, context.serde, context.names, [stored]);
  const tasks = await GlobalTable.load(context.kafka, context.serde, context.names, 'tasks');
  const verifierProcessor = createVerifierProcessor(context, { runId: 'it-kinds', pool, imageFor, tasks, referenceRuns: 1, timeoutMs: 15_000, trees: store });
  const rewardProcessor = createRewardProcessor(context, { stragglerDeadlineMs: 600_000 });
  try {
    await verifierProcessor.start();
    await rewardProcessor.start();
    const finals = [{ 'solve.py': SQUARE }, { 'solve.py': HALF_RIGHT }, { 'solve.py': 'print(0)\n' }];
    const trajectories = await Promise.all(
      finals.map(async (files, attempt) => {
        const trajectory = trajectoryFor(stored, {}, { groupId: 'fraction', groupSize: 3, attempt, steps: [writeStep(0, 'solve.py', files['solve.py'])] });
        return { ...trajectory, finalFilesRef: await store.put(files) };
      }),
    );
    await sendRaw(context, 'trajectories', await Promise.all(trajectories.map(async (t) => ({ key: t.lineage.taskId, value: await context.serde.encode('trajectories', t) }))));
    let rewards: Reward[] = [];
    await eventually('three rewards', async () => (rewards = await readAll(context, 'rewards')).length >= 3, 240_000);
    assert.deepEqual(await readAll(context, 'deadLetters'), []);
    const byAttempt = [...rewards].sort((a, b) => a.lineage.attempt - b.lineage.attempt);
    assert.deepEqual(byAttempt.map((r) => r.reward), [1, 0.5, 0]);
    assert.deepEqual(byAttempt.map((r) => r.disposition), ['learn', 'learn', 'learn']);
    assert.ok(Math.abs(byAttempt[0]!.groupMean - 0.5) < 1e-9);
    assert.ok(byAttempt[0]!.advantage > 0 && Math.abs(byAttempt[1]!.advantage) < 1e-6 && byAttempt[2]!.advantage < 0);
    const verifications = await readAll(context, 'verifications');
    assert.deepEqual(verifications.map((v) => v.checkKind), ['script', 'script', 'script']);
  } finally {
    await rewardProcessor.stop();
    await verifierProcessor.stop();
    await tasks.close();
  }
});
