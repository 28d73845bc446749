import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { DuckDBInstance } from '@duckdb/node-api';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { LocalTreeStore } from '../../connectors/artifacts/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { WORKSPACE_ENV } from '../../envs/index.js';
import { calibrate } from '../../pipelines/jobs/calibrate/index.js';
import { readTree, resolveWorkspaceJob, runWorkspaceJob } from '../../pipelines/jobs/task-job/index.js';
import { Verifier } from '../../pipelines/verifier/index.js';
import { NotFoundError, type FileTree, type Task, type Verification } from '../../schemas/index.js';
import { imageFor } from '../../stack/index.js';
import { ensureStack, freshContext, readAll, tempDir } from './harness.js';
import { trajectoryFor } from './verifier-fixtures.js';

/**
 * SWE-bench-style rows end to end: a git repository built here, a row naming it (base_commit, patch, test_patch,
 * FAIL_TO_PASS and PASS_TO_PASS as SWE-bench encodes them), imported by a workspace job onto fresh topics, and
 * the reference patch, a bad patch and the untouched tree verified in real grading sandboxes.
 */
const pool = new DockerSandboxPool();
before(ensureStack, { timeout: 900_000 });
after(() => pool.close());

const signal = new AbortController().signal;

const write = (root: string, tree: FileTree): void => {
  for (const [path, content] of Object.entries(tree)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), content);
  }
};
const git = (repo: string, ...args: string[]): string => execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { encoding: 'utf8' }).trim();
/** The `git diff` of a change to the repository's HEAD; the change is undone afterwards. */
function diffOf(repo: string, tree: FileTree): string {
  write(repo, tree);
  git(repo, 'add', '-A');
  const diff = `${git(repo, 'diff', '--cached')}\n`;
  git(repo, 'reset', '-q', '--hard');
  git(repo, 'clean', '-fdq');
  return diff;
}
/** A tree with a patch applied, as an agent's final files would be. */
async function patched(files: FileTree, patch: string): Promise<FileTree> {
  const dir = tempDir('swe-rows-final');
  write(dir, files);
  execFileSync('git', ['apply', '-'], { cwd: dir, input: patch, env: { ...process.env, GIT_CEILING_DIRECTORIES: join(dir, '..') } });
  return readTree({ folder: dir }, { maxFileBytes: 1 << 20 });
}

const BASE: FileTree = {
  'calc/__init__.py': 'from .ops import add\nfrom .parse import parse_pair\n',
  'calc/ops.py': 'def add(a, b):\n    """The sum of two numbers."""\n    return a\n',
  'calc/parse.py': 'def parse_pair(text):\n    left, right = text.split("+")\n    return int(left), int(right)\n',
  'tests/test_ops.py': 'from calc import add\n\n\ndef test_zero():\n    assert add(1, 0) == 1\n',
};

test('an SWE-style row becomes a workspace task whose reference patch passes and whose bad patch and starting tree fail', { timeout: 900_000 }, async (t) => {
  const root = tempDir('swe-rows');
  const repo = join(root, 'calc');
  write(repo, BASE);
  git(repo, 'init', '-q');
  git(repo, 'add', '.');
  git(repo, 'commit', '-qm', 'base');
  const baseCommit = git(repo, 'rev-parse', 'HEAD');
  write(repo, { 'README.md': 'a later commit the task must not see\n' });
  git(repo, 'add', '.');
  git(repo, 'commit', '-qm', 'later');

  const patch = diffOf(repo, { 'calc/ops.py': 'def add(a, b):\n    """The sum of two numbers."""\n    return a + b\n' });
  const badPatch = diffOf(repo, { 'calc/ops.py': 'def add(a, b):\n    """The sum of two numbers."""\n    return a + abs(b)\n' });
  const testPatch = diffOf(repo, {
    'tests/test_ops.py': 'from calc import add\n\n\ndef test_zero():\n    assert add(1, 0) == 1\n\n\ndef test_add():\n    assert add(1, 2) == 3\n    assert add(2, -1) == 1\n',
    'tests/test_parse.py': 'from calc import parse_pair\n\n\ndef test_parse_pair():\n    assert parse_pair("2+3") == (2, 3)\n',
  });
  const row = {
    instance_id: 'acme__calc-42',
    repo: 'acme/calc',
    repo_path: 'calc',
    base_commit: baseCommit,
    patch,
    test_patch: testPatch,
    problem_statement: 'calc.add ignores its second argument\n\n`add(1, 2)` returns 1.',
    FAIL_TO_PASS: JSON.stringify(['tests/test_ops.py::test_add']),
    PASS_TO_PASS: JSON.stringify(['tests/test_ops.py::test_zero', 'tests/test_parse.py::test_parse_pair']),
  };
  // A test patch made against another tree: its file is not in this one.
  const stale = { ...row, instance_id: 'acme__calc-43', test_patch: testPatch.replaceAll('tests/test_ops.py', 'tests/test_calc.py') };
  writeFileSync(join(root, 'rows.jsonl'), `${JSON.stringify(row)}\n${JSON.stringify(stale)}\n`);

  const context = await freshContext('swe-rows');
  const job = resolveWorkspaceJob({ name: 'swe-rows-it', env: WORKSPACE_ENV, sweRows: [{ path: 'rows.jsonl', timeoutMs: 30_000 }] }, root);
  const report = await runWorkspaceJob({ job, rejectsDir: join(root, 'rejects'), trees: new LocalTreeStore(join(root, 'trees')), context });
  assert.equal(report.publish?.added, 1);
  const rejects = readFileSync(report.rejectsFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { row: number; reason: string });
  assert.deepEqual(rejects.map((reject) => reject.row), [2]);
  assert.match(rejects[0]!.reason, /test_patch does not apply to the tree at base_commit/);

  const [task] = (await readAll(context, 'tasks')) as Task[];
  assert.equal(task!.taskId, 'acme__calc-42');
  assert.equal(task!.envId, WORKSPACE_ENV);
  assert.equal(task!.description, row.problem_statement);
  assert.deepEqual(task!.files, BASE, 'the tree at base_commit, nothing later');
  assert.deepEqual(Object.keys(task!.hiddenTests).sort(), ['tests/test_ops.py', 'tests/test_parse.py']);
  assert.deepEqual(Object.keys(task!.referenceSolution ?? {}), ['calc/ops.py']);

  const verifier = new Verifier({ runId: 'it-swe-rows', pool, imageFor, tasks: { get: (id) => (id === task!.taskId ? task! : (() => { throw new NotFoundError(id); })()) }, referenceRuns: 1, timeoutMs: 30_000, trees: null });
  const outcomes = (v: Verification): Record<string, string> => Object.fromEntries(v.tests.map((r) => [r.id, r.outcome]));
  const verdict = async (name: string, files: FileTree): Promise<Verification> => {
    const verification = await verifier.verify(trajectoryFor(task!, files), signal);
    t.diagnostic(`${name}: passed ${verification.passed}, ${JSON.stringify(outcomes(verification))} ${verification.failureDetail ?? ''}`);
    return verification;
  };

  const reference = await verdict('reference patch', await patched(task!.files, patch));
  assert.equal(reference.passed, true, JSON.stringify(reference));
  assert.deepEqual(outcomes(reference), { 'tests/test_ops.py::test_add': 'passed', 'tests/test_ops.py::test_zero': 'passed', 'tests/test_parse.py::test_parse_pair': 'passed' });
  assert.equal(reference.score, 1);

  const bad = await verdict('bad patch', await patched(task!.files, badPatch));
  assert.equal(bad.passed, false);
  assert.equal(bad.score, 0);
  assert.deepEqual(outcomes(bad), { 'tests/test_ops.py::test_add': 'failed', 'tests/test_ops.py::test_zero': 'passed', 'tests/test_parse.py::test_parse_pair': 'passed' });

  // An agent that edits the visible test file gains nothing: the hidden version from test_patch replaces it.
  const forged = await verdict('forged tests', { ...task!.files, 'tests/test_ops.py': 'def test_add():\n    pass\n\n\ndef test_zero():\n    pass\n' });
  assert.equal(forged.passed, false);

  const calibration = await calibrate(verifier, [task!], { referenceRuns: 2, mutantsPerTask: 0, hackVariants: false, concurrency: 1, signal });
  assert.deepEqual([calibration.overall.goodRuns, calibration.overall.falseNegatives, calibration.overall.badVariants, calibration.overall.falsePositives], [2, 0, 1, 0], JSON.stringify(calibration.tasks));
});

/** `git diff` deleting a file of the repository's HEAD; the deletion is undone afterwards. */
function deletionOf(repo: string, path: string): string {
  git(repo, 'rm', '-q', path);
  const diff = `${git(repo, 'diff', '--cached')}\n`;
  git(repo, 'reset', '-q', '--hard');
  return diff;
}

async function duckdb(sql: string): Promise<void> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    await connection.run(sql);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/** A row's fields the import test does not vary. */
const SAMPLE = { repo: 'acme/calc', problem_statement: 'add() ignores its second argument\n\nSee the traceback.', hints_text: '' };

test('rows import through a workspace job from JSON Lines and Parquet alike: base tree, hidden test_patch files, reference patch; bad rows rejected with line and reason', { timeout: 300_000 }, async () => {
  const root = tempDir('swe-rows-import');
  const repo = join(root, 'calc');
  write(repo, { 'calc/__init__.py': 'from .ops import add\n', 'calc/ops.py': 'def add(a, b):\n    return a\n', 'tests/test_ops.py': 'from calc import add\n\ndef test_zero():\n    assert add(1, 0) == 1\n' });
  git(repo, 'init', '-q');
  git(repo, 'add', '.');
  git(repo, 'commit', '-qm', 'base');
  const base = git(repo, 'rev-parse', 'HEAD');
  const patch = diffOf(repo, { 'calc/ops.py': 'def add(a, b):\n    return a + b\n' });
  const testPatch = diffOf(repo, { 'tests/test_ops.py': 'from calc import add\n\ndef test_zero():\n    assert add(1, 0) == 1\n\ndef test_add():\n    assert add(1, 2) == 3\n' });
  execFileSync('tar', ['-czf', join(root, 'calc.tgz'), '-C', root, 'calc']);
  const good = { ...SAMPLE, instance_id: 'acme__calc-1', repo_path: 'calc', base_commit: base, patch, test_patch: testPatch, FAIL_TO_PASS: '["tests/test_ops.py::test_add"]', PASS_TO_PASS: ['tests/test_ops.py::test_zero'] };
  const rows = [
    good,
    { ...good, instance_id: 'acme__calc-2', repo_path: 'calc.tgz' },
    { ...good, instance_id: 'acme__calc-3', base_commit: 'deadbeef' },
    { ...good, instance_id: 'acme__calc-4', patch: patch.replace('return a + b', 'return b + a').replace('return a\n', 'return 0\n') },
    { ...good, instance_id: 'acme__calc-5', FAIL_TO_PASS: 'not json' },
    { ...good, instance_id: 'acme__calc-6', repo_path: 'missing' },
    { ...good, instance_id: 'acme__calc-7', test_patch: deletionOf(repo, 'tests/test_ops.py') },
  ];
  writeFileSync(join(root, 'rows.jsonl'), `${rows.map((row) => JSON.stringify(row)).join('\n')}\n{broken\n`);
  const job = resolveWorkspaceJob({ name: 'swe-unit', env: 'workspace/v1', sweRows: [{ path: 'rows.jsonl' }] }, root);
  const report = await runWorkspaceJob({ job, rejectsDir: join(root, 'rejects'), trees: new LocalTreeStore(join(root, 'trees')), dryRun: true });

  assert.deepEqual(report.tasks.map((task) => task.taskId), ['acme__calc-1', 'acme__calc-2']);
  const [fromFolder, fromTarball] = report.tasks;
  assert.deepEqual(fromFolder!.files, { 'calc/__init__.py': 'from .ops import add\n', 'calc/ops.py': 'def add(a, b):\n    return a\n', 'tests/test_ops.py': 'from calc import add\n\ndef test_zero():\n    assert add(1, 0) == 1\n' });
  assert.deepEqual(fromFolder!.referenceSolution, { 'calc/ops.py': 'def add(a, b):\n    return a + b\n' });
  assert.deepEqual(Object.keys(fromFolder!.hiddenTests), ['tests/test_ops.py']);
  assert.match(fromFolder!.hiddenTests['tests/test_ops.py']!, /def test_add/);
  assert.deepEqual(fromFolder!.verification, { check: { kind: 'tests', runner: 'pytest', failToPass: ['tests/test_ops.py::test_add'], passToPass: ['tests/test_ops.py::test_zero'] } });
  assert.equal(fromFolder!.description, SAMPLE.problem_statement);
  assert.deepEqual({ ...fromTarball!, taskId: 'x', title: 'x', lineage: null, source: null }, { ...fromFolder!, taskId: 'x', title: 'x', lineage: null, source: null });

  const rejects = readFileSync(report.rejectsFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { row: number; reason: string });
  const reasons = new Map(rejects.map((reject) => [reject.row, reject.reason]));
  assert.equal(rejects.length, 6, JSON.stringify(rejects));
  assert.match(reasons.get(3)!, /base_commit deadbeef is not a commit of the repository/);
  assert.match(reasons.get(4)!, /patch does not apply to the tree at base_commit/);
  assert.match(reasons.get(5)!, /FAIL_TO_PASS.*not a JSON array/);
  assert.match(reasons.get(6)!, /the repository .*missing cannot be read/);
  assert.match(reasons.get(7)!, /test_patch deletes tests\/test_ops.py/);
  assert.match(reasons.get(8)!, /not valid JSON/);

  // The good rows as Parquet, the test lists as list columns: the same tasks.
  const jsonl = join(root, 'good.jsonl');
  writeFileSync(jsonl, `${rows.slice(0, 2).map((row) => JSON.stringify({ ...row, FAIL_TO_PASS: JSON.parse(row.FAIL_TO_PASS as string) as string[] })).join('\n')}\n`);
  await duckdb(`COPY (SELECT * FROM read_json_auto('${jsonl}')) TO '${join(root, 'rows.parquet')}' (FORMAT parquet)`);
  const fromParquet = await runWorkspaceJob({ job: resolveWorkspaceJob({ name: 'swe-unit', env: 'workspace/v1', sweRows: [{ path: 'rows.parquet' }] }, root), rejectsDir: join(root, 'rejects'), trees: new LocalTreeStore(join(root, 'trees')), dryRun: true });
  assert.equal(fromParquet.rejected, 0);
  const comparable = (task: Task) => ({ ...task, lineage: null, source: null });
  assert.deepEqual(fromParquet.tasks.map(comparable), report.tasks.map(comparable));
});
