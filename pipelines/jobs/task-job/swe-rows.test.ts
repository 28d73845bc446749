import assert from 'node:assert/strict';
import { test } from 'node:test';
import { changedFiles, parseSweRow, SweRowsSource, sweTaskHeader, sweTaskId } from './swe-rows.js';

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
