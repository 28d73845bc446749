import assert from 'node:assert/strict';
import { test } from 'node:test';
import { functionSpans } from './observation.js';
import { observedTestOutput, parsePytestOutput } from './pytest-output.js';

const OUTPUT = `F.                                                                       [100%]
=================================== FAILURES ===================================
__________________________________ test_clamp __________________________________
test_visible.py:4: in test_clamp
    assert clamp(5, 0, 3) == 3
clamp.py:3: in clamp
    if x < hi:
E   AssertionError: assert 5 == 3
E    +  where 5 = clamp(5, 0, 3)
=========================== short test summary info ============================
FAILED test_visible.py::test_clamp - AssertionError: assert 5 == 3
1 failed, 1 passed in 0.03s`;

test('counts, module lines and called names from a failing run', () => {
  const summary = parsePytestOutput(OUTPUT, 1, 'clamp.py');
  assert.equal(summary.passed, false);
  assert.equal(summary.failedCount, 1);
  assert.equal(summary.passedCount, 1);
  assert.deepEqual(summary.moduleLines, [3]);
  assert.deepEqual(summary.calledNames, ['clamp']);
  assert.deepEqual(summary.failureKinds, ['AssertionError']);
});

test('failure kinds: raised exceptions by class, bare asserts as AssertionError', () => {
  const output = 'FAILED test_v.py::test_f - IndexError: list index out of range\nFAILED test_v.py::test_g[a - b] - assert 2 == 4\nERROR test_w.py - pkg.mod.CustomError: x\n';
  assert.deepEqual(parsePytestOutput(output, 1, 'm.py').failureKinds, ['IndexError', 'AssertionError', 'CustomError']);
});

test('a clean run passes', () => {
  assert.equal(parsePytestOutput('..\n2 passed in 0.01s', 0, 'x.py').passed, true);
  assert.equal(parsePytestOutput('collected 0 items / 1 error', 2, 'x.py').passed, false);
});

test('function spans follow indentation', () => {
  const spans = functionSpans('def a(x):\n    if x:\n        return 1\n\n    return 2\n\ndef b():\n    pass\n');
  assert.deepEqual(spans, [
    { name: 'a', start: 1, end: 5 },
    { name: 'b', start: 7, end: 8 },
  ]);
});

test("the runner's spectrum line: counts by line, taken off the output the agent reads; a broken one gives none", () => {
  const output = `${OUTPUT}\ntrialrun-spectrum: {"lines":{"3":[1,0],"2":[1,1]}}\n`;
  const summary = parsePytestOutput(output, 1, 'clamp.py');
  assert.deepEqual(summary.lineSpectrum, [
    { line: 2, failing: 1, passing: 1 },
    { line: 3, failing: 1, passing: 0 },
  ]);
  assert.deepEqual({ ...summary, lineSpectrum: [] }, parsePytestOutput(OUTPUT, 1, 'clamp.py'));
  assert.equal(observedTestOutput(output), `${OUTPUT.replace(' in 0.03s', '')}\n`);
  assert.deepEqual(parsePytestOutput(OUTPUT, 1, 'clamp.py').lineSpectrum, []);
  for (const broken of ['trialrun-spectrum: {', 'trialrun-spectrum: null', 'trialrun-spectrum: {"lines":{"x":[1,0],"4":[1],"5":[-1,0]}}']) {
    assert.deepEqual(parsePytestOutput(`${OUTPUT}\n${broken}`, 1, 'clamp.py').lineSpectrum, [], broken);
  }
});

test("the agent reads no duration: pytest's tally without its time, in either format, and nothing else changed", () => {
  assert.equal(observedTestOutput('F.\n1 failed, 1 passed in 0.03s'), 'F.\n1 failed, 1 passed');
  assert.equal(observedTestOutput('..\n2 passed, 1 warning in 62.10s (0:01:02)\n'), '..\n2 passed, 1 warning\n');
  assert.equal(observedTestOutput('===== 1 failed, 3 passed in 1.20s ====='), '===== 1 failed, 3 passed =====');
  assert.equal(observedTestOutput('E   assert "done in 3s" == "x"\nprint: waited in 0.5s'), 'E   assert "done in 3s" == "x"\nprint: waited in 0.5s');
  // Two runs of the same tests read the same.
  assert.equal(observedTestOutput(`${OUTPUT}\ntrialrun-spectrum: {"lines":{}}`), observedTestOutput(`${OUTPUT.replace('0.03s', '0.41s')}\ntrialrun-spectrum: {"lines":{"3":[1,0]}}`));
});
