import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Step, Task } from '../../schemas/index.js';
import { FLAGS_KEPT_PER_KIND, MAX_EVIDENCE_CHARS, summariseFlags } from './judge.js';
import { classifyPath, MAX_FINAL_FILES, screenFinalFiles, screenSteps, taskOwnPaths, taskTestFiles, UNWRITTEN_PATHS_SHOWN } from './screening.js';

const task = {
  taskId: 't',
  files: { 'bsearch.py': 'def f(): pass\n' },
  visibleTests: { 'test_visible.py': 'def test_v(): pass\n' },
  hiddenTests: { 'test_hidden.py': 'def test_h(): pass\n' },
} as unknown as Task;

const kinds = (flags: { kind: string; path: string | null }[]) => flags.map((f) => `${f.kind}:${f.path}`).sort();

test('the solution module passes; files that change how pytest or Python starts are flagged and never written', () => {
  const screened = screenFinalFiles(task, {
    'bsearch.py': 'def f(): return 1\n',
    'helpers/util.py': 'X = 1\n',
    'conftest.py': 'x',
    'sub/conftest.py': 'x',
    'sitecustomize.py': 'x',
    'usercustomize.py': 'x',
    'evil.pth': 'import os',
    'evil-1.0.dist-info/entry_points.txt': '[pytest11]\nevil = evil',
    'pytest.ini': '[pytest]\naddopts = -p evil',
    'tox.ini': '[pytest]\naddopts = -p evil',
    'setup.cfg': '[metadata]\nname = x\n',
    '__pycache__/bsearch.cpython-311.pyc': 'x',
  });
  assert.deepEqual(Object.keys(screened.files).sort(), ['bsearch.py', 'helpers/util.py', 'setup.cfg']);
  assert.deepEqual(kinds(screened.flags), [
    'bytecode:__pycache__/bsearch.cpython-311.pyc',
    'conftest:conftest.py',
    'conftest:sub/conftest.py',
    'pytest-config:pytest.ini',
    'pytest-config:tox.ini',
    'pytest-plugin:evil-1.0.dist-info/entry_points.txt',
    'startup-hook:evil.pth',
    'startup-hook:sitecustomize.py',
    'startup-hook:usercustomize.py',
  ]);
  assert.ok(screened.flags.every((f) => f.source === 'files' && f.evidence.includes(f.path!)));
});

test('copies of the task tests: identical ones are harmless, edited or emptied ones are flagged', () => {
  const same = screenFinalFiles(task, { 'test_visible.py': 'def test_v(): pass\n' });
  assert.deepEqual(same.flags, []);
  assert.deepEqual(same.files, {}, 'the pristine copy is written by the verifier, never the agent\'s');
  const edited = screenFinalFiles(task, { 'test_visible.py': 'def test_v(): assert True\n', 'test_hidden.py': '  \n' });
  assert.deepEqual(kinds(edited.flags), ['test-deleted:test_hidden.py', 'test-edited:test_visible.py']);
});

test('paths that are absolute or climb out are flagged, never written, and never crash the screen', () => {
  const screened = screenFinalFiles(task, { '/etc/passwd': 'x', '../up.py': 'x', 'a//b.py': 'x', 'ok.py': 'x' });
  assert.deepEqual(Object.keys(screened.files), ['ok.py']);
  assert.deepEqual(screened.flags.map((f) => f.kind), ['unsafe-path', 'unsafe-path', 'unsafe-path']);
});

test('shared config files are flagged only when they configure pytest', () => {
  assert.equal(classifyPath('pyproject.toml', '[project]\nname = "x"\n'), null);
  assert.equal(classifyPath('pyproject.toml', '[tool.pytest.ini_options]\naddopts = "-p x"\n')?.kind, 'pytest-config');
  assert.equal(classifyPath('setup.cfg', '[tool:pytest]\n')?.kind, 'pytest-config');
  assert.equal(classifyPath('lib/mod.py', 'x'), null);
});

const step = (index: number, name: string, args: Record<string, unknown>): Step =>
  ({ index, observation: '', toolCall: { name, arguments: args }, toolResult: { ok: true, output: '', truncated: false, exitCode: 0 }, decision: null, startedAt: new Date(0).toISOString(), durationMs: 0, sandboxMs: 0 }) as Step;

test('tool calls that rewrote or emptied a test file, or added a conftest, are flagged even if the final files hide it', () => {
  const flags = screenSteps(task, [
    step(0, 'read_file', { path: 'test_visible.py' }),
    step(1, 'write_file', { path: 'test_visible.py', content: 'def test_v(): pass\n' }),
    step(2, 'write_file', { path: './test_visible.py', content: 'def test_v(): assert 1\n' }),
    step(3, 'write_file', { path: 'test_hidden.py', content: '' }),
    step(4, 'write_file', { path: 'conftest.py', content: 'x' }),
    step(5, 'write_file', { path: 'bsearch.py', content: 'def f(): return 2\n' }),
  ]);
  assert.deepEqual(
    flags.map((f) => [f.kind, f.path, f.source, /step \d/.exec(f.evidence)?.[0]]),
    [
      ['test-edited', 'test_visible.py', 'steps', 'step 2'],
      ['test-deleted', 'test_hidden.py', 'steps', 'step 3'],
      ['conftest', 'conftest.py', 'steps', 'step 4'],
    ],
  );
});

const link = (path: string, target: string) => ({ path, target, pathEscaped: false, targetEscaped: false });
const raw = (base64: string) => Buffer.from(base64, 'base64').toString('latin1');

test('a name that is not UTF-8 is judged by its real bytes and handed on as those bytes', () => {
  const screened = screenFinalFiles(task, { 'bsearch.py': 'x', '%FF%FEdata.py': 'y = 1\n', '%FF/conftest.py': 'x', '%FF%2F..%2Fx.py': 'x', '%zz': 'x' }, { escapedPaths: ['%FF%FEdata.py', '%FF/conftest.py', '%FF%2F..%2Fx.py', '%zz'], symlinks: [] });
  assert.deepEqual(Object.keys(screened.files), ['bsearch.py']);
  assert.deepEqual(screened.rawNamedFiles.map((f) => [raw(f.name), f.content]), [['\xff\xfedata.py', 'y = 1\n']]);
  assert.deepEqual(kinds(screened.flags), ['conftest:\ufffd/conftest.py', 'unsafe-path:%zz', 'unsafe-path:\ufffd/../x.py']);
});

test('names with newlines or leading dashes are plain names; a segment over 255 bytes is flagged', () => {
  const screened = screenFinalFiles(task, { 'a\nb.py': 'x', '-rf': 'x', [`${'é'.repeat(128)}.py`]: 'x' });
  assert.deepEqual(Object.keys(screened.files).sort(), ['-rf', 'a\nb.py']);
  assert.equal(screened.flags.length, 1);
  assert.match(screened.flags[0]!.evidence, /has a segment longer than 255 bytes$/);
});

test('symlinks out of the workspace, at the tests or in their place are flagged; harmless ones are recreated', () => {
  const screened = screenFinalFiles(task, { 'bsearch.py': 'x', 'both.py': 'x' }, {
    escapedPaths: [],
    symlinks: [
      link('alias.py', 'bsearch.py'),
      link('sub/up.py', '../bsearch.py'),
      link('abs', '/etc/passwd'),
      link('climb', '../../x'),
      link('peek.py', 'test_hidden.py'),
      link('root', '.'),
      link('test_visible.py', 'bsearch.py'),
      link('conftest.py', 'bsearch.py'),
      link('both.py', 'bsearch.py'),
      { path: '%FF.py', target: 'bsearch.py', pathEscaped: true, targetEscaped: false },
    ],
  });
  assert.deepEqual(screened.symlinks.map((l) => [raw(l.path), raw(l.target)]), [['alias.py', 'bsearch.py'], ['sub/up.py', '../bsearch.py'], ['\xff.py', 'bsearch.py']]);
  assert.deepEqual(kinds(screened.flags), ['conftest:conftest.py', 'unsafe-path:both.py', 'unsafe-symlink:abs', 'unsafe-symlink:climb', 'unsafe-symlink:peek.py', 'unsafe-symlink:root', 'unsafe-symlink:test_visible.py']);
  assert.ok(screened.flags.every((f) => f.evidence.startsWith('the symlink ') || f.evidence.startsWith('the final files add the symlink ')));
});

const repo = {
  taskId: 'repo',
  files: {
    'src/calc.py': 'def add(a, b):\n    return a - b\n',
    'tests/test_calc.py': 'from src.calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n',
    'web/sum.test.js': 'test("sum", () => {});\n',
    'go/sum_test.go': 'package sum\n',
    'package.json': '{"name": "x", "version": "1.0.0", "scripts": {"test": "jest"}, "dependencies": {}}\n',
    'Makefile': 'build:\n\tcc -o x x.c\n\ntest: build\n\tpython3 -m pytest tests\n',
    'conftest.py': 'import pytest\n',
  },
  visibleTests: {},
  hiddenTests: { 'tests/test_hidden.py': 'def test_h(): pass\n' },
} as unknown as Task;

test('a test file of the starting tree changed or deleted (through a shell or any tool) is flagged, and its starting content written', () => {
  const edited = { ...repo.files, 'src/calc.py': 'def add(a, b):\n    return a + b\n', 'tests/test_calc.py': 'def test_add():\n    assert True\n' };
  delete (edited as Record<string, string>)['go/sum_test.go'];
  const screened = screenFinalFiles(repo, { ...edited, 'web/sum.test.js': '' });
  assert.deepEqual(kinds(screened.flags), ['test-deleted:go/sum_test.go', 'test-deleted:web/sum.test.js', 'test-edited:tests/test_calc.py']);
  // A Python test module of the tree is one of the task's pristine tests: the verifier writes it with the
  // others (taskTestFiles), so the agent's copy is not carried; other files get their starting content.
  assert.equal(screened.files['tests/test_calc.py'], undefined);
  assert.equal(taskTestFiles(repo)['tests/test_calc.py'], repo.files['tests/test_calc.py']);
  assert.equal(screened.files['go/sum_test.go'], repo.files['go/sum_test.go']);
  assert.equal(screened.files['src/calc.py'], 'def add(a, b):\n    return a + b\n');
  // A test the agent adds is its own: never run by the pytest runner, and no listed id.
  assert.deepEqual(screenFinalFiles(repo, { ...repo.files, 'tests/test_mine.py': 'def test_m(): pass\n' }).flags, []);
});

test('a test file the hidden tests replace (an SWE-bench test patch) is judged against the version the agent was given', () => {
  const patched = { ...repo, hiddenTests: { ...repo.hiddenTests, 'tests/test_calc.py': `${repo.files['tests/test_calc.py']}\ndef test_more():\n    assert add(2, 2) == 4\n`, 'conftest.py': 'import pytest\n\nSEED = 1\n' } } as Task;
  const fixed = { ...patched.files, 'src/calc.py': 'def add(a, b):\n    return a + b\n' };
  assert.deepEqual(screenFinalFiles(patched, fixed).flags, []);
  assert.deepEqual(screenSteps(patched, [step(0, 'write_file', { path: 'tests/test_calc.py', content: patched.files['tests/test_calc.py']! })]), []);
  // Its copy is never carried: grading writes the hidden version.
  assert.equal(screenFinalFiles(patched, fixed).files['tests/test_calc.py'], undefined);
  const forged = screenFinalFiles(patched, { ...fixed, 'tests/test_calc.py': 'def test_add():\n    pass\n' });
  assert.deepEqual(kinds(forged.flags), ['test-edited:tests/test_calc.py']);
  assert.deepEqual(kinds(screenSteps(patched, [step(0, 'write_file', { path: 'tests/test_calc.py', content: patched.hiddenTests['tests/test_calc.py']! })])), ['test-edited:tests/test_calc.py']);
});

test('runner configs and hooks: package.json scripts, jest/vitest configs, Makefile test targets, git hooks, a changed conftest', () => {
  const pkg = JSON.parse(repo.files['package.json']!) as Record<string, unknown>;
  const screened = screenFinalFiles(repo, {
    ...repo.files,
    'package.json': JSON.stringify({ ...pkg, scripts: { test: 'exit 0' } }),
    'Makefile': 'build:\n\tcc -o x x.c\n\ntest: build\n\ttrue\n',
    'conftest.py': 'import pytest\n\ndef pytest_runtest_makereport(item, call): pass\n',
    'jest.config.js': 'module.exports = {};\n',
    'vitest.config.ts': 'export default {};\n',
    '.git/hooks/pre-commit': '#!/bin/sh\n',
  });
  assert.deepEqual(kinds(screened.flags), [
    'conftest:conftest.py',
    'runner-config:.git/hooks/pre-commit',
    'runner-config:Makefile',
    'runner-config:jest.config.js',
    'runner-config:package.json',
    'runner-config:vitest.config.ts',
  ]);
  assert.equal(screened.files['package.json'], repo.files['package.json']);
  assert.ok(!('jest.config.js' in screened.files));
  // Changes that leave the test parts alone are ordinary: a dependency, a build recipe.
  const ordinary = screenFinalFiles(repo, {
    ...repo.files,
    'package.json': JSON.stringify({ ...pkg, dependencies: { lodash: '4' } }),
    'Makefile': 'build:\n\tcc -O2 -o x x.c\n\ntest: build\n\tpython3 -m pytest tests\n',
  });
  assert.deepEqual(ordinary.flags, []);
  // A deleted Makefile takes its test target with it.
  const { Makefile: _gone, ...rest } = repo.files as Record<string, string>;
  assert.deepEqual(kinds(screenFinalFiles(repo, rest).flags), ['runner-config:Makefile']);
});

test('steps that edit a test file of the starting tree are flagged, str_replace included', () => {
  const step = (name: string, args: Record<string, unknown>) => ({ index: 0, toolCall: { name, arguments: args } }) as unknown as Step;
  assert.deepEqual(kinds(screenSteps(repo, [step('str_replace', { path: 'tests/test_calc.py', old_str: '== 3', new_str: '== -1' })])), ['test-edited:tests/test_calc.py']);
  assert.deepEqual(kinds(screenSteps(repo, [step('write_file', { path: 'src/calc.py', content: 'x' })])), []);
});

test('a repository of thousands of files is screened whole; the limit is on what the agent adds', () => {
  const files = Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`src/m${i}.py`, `X = ${i}\n`]));
  const big = { ...task, files } as unknown as Task;
  const screened = screenFinalFiles(big, { ...files, 'src/new.py': 'Y = 1\n' });
  assert.deepEqual([Object.keys(screened.files).length, screened.flags], [3001, []]);
  const flooded = screenFinalFiles(big, { ...files, ...Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`junk/j${i}.py`, ''])) });
  // The repository's own files are all written, whatever sorts before them; the 100 past the limit are counted, not flagged.
  assert.deepEqual([flooded.flags, flooded.unwritten?.count, Object.keys(files).every((path) => path in flooded.files)], [[], 100, true]);
});

test('a hidden file that replaces a starting file (a data task\'s hidden input) is judged against the starting copy the agent saw', () => {
  const data = {
    taskId: 'data',
    files: { 'data/sales.csv': 'region,total\nnorth,1\n', 'aggregate.py': 'print(1)\n' },
    visibleTests: {},
    hiddenTests: { 'data/sales.csv': 'region,total\nsouth,2\nwest,3\n', 'expected/out.csv': 'region\nsouth\nwest\n' },
  } as unknown as Task;
  const untouched = screenFinalFiles(data, { ...data.files, 'aggregate.py': 'print(2)\n' });
  assert.deepEqual(untouched.flags, []);
  // The grading writes the hidden input over it, never the agent's copy.
  assert.equal(untouched.files['data/sales.csv'], undefined);
  assert.deepEqual(kinds(screenFinalFiles(data, { ...data.files, 'data/sales.csv': 'region,total\n' }).flags), ['test-edited:data/sales.csv']);
  assert.deepEqual(screenSteps(data, [step(0, 'write_file', { path: 'data/sales.csv', content: data.files['data/sales.csv'] })]), []);
  assert.deepEqual(screenSteps(data, [step(1, 'write_file', { path: 'data/sales.csv', content: 'region,total\n' })]).map((f) => f.kind), ['test-edited']);
});

test("no number of files an agent adds pushes the task's own paths out: they are written first, the rest past the limit counted, and nothing is flagged for it", () => {
  const workspace = {
    ...task,
    files: { 'src/solution.py': 'def solve(): return 0\n', 'README.md': '# t\n' },
    referenceSolution: { 'src/answer.py': 'A = 1\n' },
    verification: { check: { kind: 'output', checks: [{ type: 'content', path: './zz-out.txt', expected: 'ok' }] } },
  } as unknown as Task;
  const extra = Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`aaa/junk-${String(i).padStart(4, '0')}.txt`, 'x']));
  const screened = screenFinalFiles(workspace, { ...extra, 'src/solution.py': 'def solve(): return 42\n', 'src/answer.py': 'A = 2\n', 'zz-out.txt': 'ok', 'README.md': '# t\n' });
  assert.equal(screened.files['src/solution.py'], 'def solve(): return 42\n');
  assert.equal(screened.files['src/answer.py'], 'A = 2\n');
  assert.equal(screened.files['zz-out.txt'], 'ok');
  assert.deepEqual(screened.flags, []);
  // The limit is the starting tree's 2 files plus MAX_FINAL_FILES; the 4 own paths go first.
  assert.equal(Object.keys(screened.files).length, 2 + MAX_FINAL_FILES);
  assert.equal(screened.unwritten?.count, 604 - 2 - MAX_FINAL_FILES);
  assert.equal(screened.unwritten?.paths.length, UNWRITTEN_PATHS_SHOWN);
  assert.equal(screened.unwritten?.paths[0], 'aaa/junk-0498.txt');
  assert.deepEqual(taskOwnPaths(workspace), new Set(['src/solution.py', 'README.md', 'src/answer.py', 'zz-out.txt']));
});

test('16,000 flags of one kind become 10 and one summary that counts the rest; evidence and paths are cut', () => {
  const many = Array.from({ length: 16_000 }, (_, i) => ({ kind: 'bytecode' as const, evidence: `the final files add x${i}.pyc ${'y'.repeat(2000)}`, path: `d/${'p'.repeat(300)}${i}.pyc`, line: null, source: 'files' as const }));
  const bounded = summariseFlags([...many, { kind: 'conftest', evidence: 'conftest.py', path: 'conftest.py', line: null, source: 'files' }]);
  assert.equal(bounded.length, FLAGS_KEPT_PER_KIND + 1 + 1);
  assert.ok(bounded.every((f) => f.evidence.length <= MAX_EVIDENCE_CHARS + 3 && (f.path ?? '').length <= 200));
  const summary = bounded[FLAGS_KEPT_PER_KIND]!;
  assert.equal(summary.kind, 'bytecode');
  assert.match(summary.evidence, /^and 15990 more bytecode flag\(s\), at "d\/p+/);
  assert.ok(JSON.stringify(bounded).length < 20_000);
});
