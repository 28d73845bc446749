import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runHelperLines } from './python.js';

interface Split {
  key: number;
  error?: string;
  visible_tests?: string;
  hidden_tests?: string;
  cases?: number;
  visible_cases?: number;
}

const CHECK = `
import math

METADATA = {'author': 'x'}


def check(candidate):
    """Docstring."""
    assert candidate(1) == 2
    assert True, "ignored: cannot fail"
    values = [1, 2, 3]
    assert candidate(values[0]) == 2
    for value in values:
        assert candidate(value) == value + 1
    assert math.isclose(candidate(0.5), 1.5)
`;

const MODULE = 'def plus_one(x):\n    return x + 1\n';

/** Runs pytest on the given files in a scratch folder; returns pytest's exit code. */
function pytest(files: Record<string, string>, target: string): number {
  const dir = mkdtempSync(join(tmpdir(), 'trialrun-split-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  try {
    execFileSync('python3', ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', target], { cwd: dir, stdio: 'pipe' });
    return 0;
  } catch (error) {
    return (error as { status: number }).status;
  }
}

describe('split_tests.py', () => {
  it('turns a check function into visible and hidden pytest files, one case per assert with its set-up', async () => {
    const [answer] = await runHelperLines<object, Split>('split_tests.py', [{ key: 0, style: 'check-function', code: CHECK, entry_point: 'plus_one', module: 'plus_one.py', visible_fraction: 0.5 }]);
    assert.equal(answer!.error, undefined);
    assert.equal(answer!.cases, 4);
    assert.equal(answer!.visible_cases, 2);
    assert.equal((answer!.hidden_tests!.match(/^def test_case_\d+/gm) ?? []).length, 4);
    assert.equal((answer!.visible_tests!.match(/^def test_case_\d+/gm) ?? []).length, 2);
    assert.match(answer!.hidden_tests!, /from plus_one import plus_one as candidate/);
    assert.match(answer!.hidden_tests!, /def test_case_03\(\):\n    values = \[1, 2, 3\]\n    for value in values:/);
    assert.doesNotMatch(answer!.hidden_tests!, /assert True/);
    // The converted tests pass on the solution and catch a bug, with real pytest.
    const hostHasPytest = pytest({ 'test_noop.py': 'def test_noop():\n    pass\n' }, 'test_noop.py') === 0;
    if (hostHasPytest) {
      assert.equal(pytest({ 'plus_one.py': MODULE, 'test_hidden.py': answer!.hidden_tests! }, 'test_hidden.py'), 0);
      assert.equal(pytest({ 'plus_one.py': MODULE.replace('+ 1', '+ 2'), 'test_hidden.py': answer!.hidden_tests! }, 'test_hidden.py'), 1);
    }
  });

  it('takes a list of asserts with set-up code', async () => {
    const [answer] = await runHelperLines<object, Split>('split_tests.py', [
      { key: 0, style: 'assert-list', asserts: ['assert plus_one(1) == 2', 'assert plus_one(2) == 3', 'assert plus_one(-1) == 0'], setup: 'import math', module: 'plus_one.py', visible_fraction: 0.34 },
    ]);
    assert.equal(answer!.cases, 3);
    assert.equal(answer!.visible_cases, 2);
    assert.match(answer!.visible_tests!, /^from plus_one import \*.*\nimport math\n/);
  });

  it('explains why tests cannot be converted', async () => {
    const answers = await runHelperLines<object, Split>('split_tests.py', [
      { key: 0, style: 'check-function', code: 'def helper():\n    pass\n', entry_point: 'f', module: 'f.py' },
      { key: 1, style: 'check-function', code: 'def check(candidate):\n    assert True\n', entry_point: 'f', module: 'f.py' },
      { key: 2, style: 'check-function', code: 'def check(candidate:\n', entry_point: 'f', module: 'f.py' },
      { key: 3, style: 'check-function', code: 'def check(c):\n    assert c()\n', entry_point: 'f', module: 'not a module' },
      { key: 4, style: 'yaml' },
    ]);
    const errors = answers.map((a) => a.error ?? '');
    assert.equal(errors[0], 'the tests define no check(candidate) function');
    assert.equal(errors[1], 'the tests hold no assert that could fail');
    assert.match(errors[2]!, /^the tests do not parse: line 1: /);
    assert.equal(errors[3], "module 'not a module' is not an importable Python file name");
    assert.equal(errors[4], "unknown test style 'yaml'");
  });

  it('answers a row whose tests are too deep or too long to convert with an error, and converts the rows around it', async () => {
    const deepCode = `def check(candidate):\n    assert candidate(${'1 + '.repeat(200_000)}1)\n`;
    const nested = `def check(candidate):\n    assert candidate(${'('.repeat(5000)}1${')'.repeat(5000)})\n`;
    const good = { style: 'assert-list', asserts: ['assert plus_one(1) == 2'], setup: '', module: 'plus_one.py', visible_fraction: 0.5 };
    const answers = await runHelperLines<object, Split>('split_tests.py', [
      { key: 0, ...good },
      { key: 1, style: 'check-function', code: deepCode, entry_point: 'f', module: 'f.py' },
      { key: 2, style: 'check-function', code: nested, entry_point: 'f', module: 'f.py' },
      { key: 3, style: 'check-function', code: 'def check(candidate):\n    assert candidate("\u0000")\n', entry_point: 'f', module: 'f.py' },
      { key: 4, ...good },
    ]);
    assert.deepEqual(answers.map((a) => a.key), [0, 1, 2, 3, 4]);
    assert.equal(answers[0]!.cases, 1);
    assert.match(answers[1]!.error!, /too deeply nested or too large|do not parse/);
    assert.match(answers[2]!.error!, /do not parse|too deeply nested/);
    assert.equal(answers[4]!.cases, 1);
  });

  it('answers the request a helper dies on through onCrash and goes on with the rest in a new helper', async () => {
    // Python's json module recurses: a request nested far past its recursion limit kills the helper outright.
    const killer = { key: 1, style: 'assert-list', asserts: JSON.parse(`${'['.repeat(2000)}${']'.repeat(2000)}`) as unknown, module: 'f.py' };
    const good = (key: number): object => ({ key, style: 'assert-list', asserts: ['assert plus_one(1) == 2'], setup: '', module: 'plus_one.py', visible_fraction: 0.5 });
    const answers = await runHelperLines<{ key: number }, Split>('split_tests.py', [good(0), killer, good(2), killer, good(4)] as Array<{ key: number }>, {
      onCrash: (request, reason) => ({ key: request.key, error: reason }),
    });
    assert.deepEqual(answers.map((a) => a.key), [0, 1, 2, 1, 4]);
    assert.deepEqual(answers.map((a) => a.cases ?? null), [1, null, 1, null, 1]);
    assert.match(answers[1]!.error!, /^the helper split_tests\.py failed with exit code 1 on it \(RecursionError/);
    await assert.rejects(runHelperLines('split_tests.py', [good(0), killer]), /split_tests\.py failed with exit code 1: .*RecursionError/s);
  });
});
