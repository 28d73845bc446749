import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { LocalTreeStore } from '../../../connectors/artifacts/index.js';
import { changedFiles, parseSweRow, SweRowsSource, sweTaskHeader, sweTaskId } from './swe-rows.js';
import { resolveWorkspaceJob, runWorkspaceJob } from './workspace-job.js';

const ROW = {
  instance_id: 'acme__calc-7',
  repo: 'acme/calc',
  base_commit: 'abc1234',
  patch: 'diff --git a/x b/x\n',
  test_patch: 'diff --git a/t b/t\n',
  problem_statement: 'add() ignores its second argument\n\nSee the traceback.',
  FAIL_TO_PASS: '["tests/test_calc.py::test_add"]',
  PASS_TO_PASS: '[]',
  hints_text: '',
};

test('FAIL_TO_PASS and PASS_TO_PASS are read from JSON-encoded strings (as SWE-bench stores them) and from arrays alike', () => {
  const fromStrings = parseSweRow(ROW);
  const fromArrays = parseSweRow({ ...ROW, FAIL_TO_PASS: ['tests/test_calc.py::test_add'], PASS_TO_PASS: [] });
  assert.ok('row' in fromStrings && 'row' in fromArrays);
  assert.deepEqual(fromStrings.row.FAIL_TO_PASS, ['tests/test_calc.py::test_add']);
  assert.deepEqual(fromStrings.row, fromArrays.row);
  assert.equal(fromStrings.row['hints_text'], '', 'columns SWE-bench adds are kept');
});

test('a malformed row is refused naming each field that is wrong', () => {
  const problem = (value: unknown): string => {
    const parsed = parseSweRow(value);
    assert.ok('problem' in parsed, `expected a problem for ${JSON.stringify(value)}`);
    return parsed.problem;
  };
  assert.match(problem({ ...ROW, FAIL_TO_PASS: 'tests/test_calc.py::test_add' }), /FAIL_TO_PASS.*not a JSON array of test ids/);
  assert.match(problem({ ...ROW, FAIL_TO_PASS: '[]' }), /FAIL_TO_PASS.*at least one test/);
  assert.match(problem({ ...ROW, PASS_TO_PASS: '{"a": 1}' }), /PASS_TO_PASS/);
  assert.match(problem({ ...ROW, PASS_TO_PASS: [''] }), /PASS_TO_PASS.*empty/);
  assert.match(problem({ ...ROW, base_commit: 'main' }), /base_commit.*commit id/);
  assert.match(problem({ ...ROW, patch: '' }), /patch/);
  const { problem_statement: _dropped, test_patch: _alsoDropped, ...missing } = ROW;
  const both = problem(missing);
  assert.match(both, /problem_statement/);
  assert.match(both, /test_patch/);
});

test('a row becomes a task header: its id from the instance id, its prompt the problem statement, SWE-bench verification', () => {
  const parsed = parseSweRow({ ...ROW, FAIL_TO_PASS: '["a::t", "a::t"]' });
  assert.ok('row' in parsed);
  const header = sweTaskHeader(parsed.row, SweRowsSource.parse({ path: 'rows.jsonl', tags: ['mine'], timeoutMs: 60_000 }));
  assert.equal(header.id, 'acme__calc-7');
  assert.equal(header.title, 'acme__calc-7: add() ignores its second argument');
  assert.equal(header.description, ROW.problem_statement);
  assert.deepEqual(header.tags, ['mine', 'swe', 'acme/calc']);
  assert.deepEqual(header.verification, { check: { kind: 'tests', runner: 'pytest', failToPass: ['a::t'], passToPass: [], timeoutMs: 60_000 } });
  assert.equal(sweTaskId('Django__Django-11099'), 'django__django-11099');
  assert.equal(sweTaskId('owner/repo#12'), 'owner-repo-12');
});

test('changed files are those added or changed; a deletion is refused by name', () => {
  assert.deepEqual(changedFiles({ a: '1', b: '2' }, { a: '1', b: '3', c: '4' }, 'patch'), { b: '3', c: '4' });
  assert.throws(() => changedFiles({ a: '1', b: '2' }, { a: '1' }, 'test_patch'), /test_patch deletes b/);
});

const git = (repo: string, ...args: string[]): string => execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { encoding: 'utf8' }).trim();
const write = (root: string, tree: Record<string, string>): void => {
  for (const [path, content] of Object.entries(tree)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), content);
  }
};
/** `git diff` of a change to the repository's HEAD, the change then undone. */
const diffOf = (repo: string, tree: Record<string, string>): string => {
  write(repo, tree);
  git(repo, 'add', '-A');
  const diff = `${git(repo, 'diff', '--cached')}\n`;
  git(repo, 'reset', '-q', '--hard');
  git(repo, 'clean', '-fdq');
  return diff;
};

/** `git diff` deleting a file of the repository's HEAD, the deletion then undone. */
const deletionOf = (repo: string, path: string): string => {
  git(repo, 'rm', '-q', path);
  const diff = `${git(repo, 'diff', '--cached')}\n`;
  git(repo, 'reset', '-q', '--hard');
  return diff;
};

test('rows import through a workspace job: base tree, hidden test_patch files, reference patch; bad rows rejected with line and reason', async () => {
  const root = mkdtempSync(join(tmpdir(), 'trialrun-swe-rows-'));
  const repo = join(root, 'calc');
  write(repo, { 'calc/__init__.py': 'from .ops import add\n', 'calc/ops.py': 'def add(a, b):\n    return a\n', 'tests/test_ops.py': 'from calc import add\n\ndef test_zero():\n    assert add(1, 0) == 1\n' });
  git(repo, 'init', '-q');
  git(repo, 'add', '.');
  git(repo, 'commit', '-qm', 'base');
  const base = git(repo, 'rev-parse', 'HEAD');
  const patch = diffOf(repo, { 'calc/ops.py': 'def add(a, b):\n    return a + b\n' });
  const testPatch = diffOf(repo, { 'tests/test_ops.py': 'from calc import add\n\ndef test_zero():\n    assert add(1, 0) == 1\n\ndef test_add():\n    assert add(1, 2) == 3\n' });
  execFileSync('tar', ['-czf', join(root, 'calc.tgz'), '-C', root, 'calc']);
  const good = { ...ROW, instance_id: 'acme__calc-1', repo_path: 'calc', base_commit: base, patch, test_patch: testPatch, FAIL_TO_PASS: '["tests/test_ops.py::test_add"]', PASS_TO_PASS: ['tests/test_ops.py::test_zero'] };
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
  assert.equal(fromFolder!.description, ROW.problem_statement);
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
});
