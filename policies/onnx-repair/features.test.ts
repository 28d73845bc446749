import assert from 'node:assert/strict';
import { test } from 'node:test';
import { repairObservation } from '../../test/fixtures/repair-observation.js';
import { FEATURE_NAMES } from '../linear-repair/index.js';
import { candidateFeatures, lineSuspiciousness, ONNX_REPAIR_FEATURE_NAMES, tokenCounter } from './features.js';

const edits = [
  { id: 0, kind: 'compare-op', line: 3, col: 7, before: '<', after: '<=' },
  { id: 1, kind: 'compare-op', line: 3, col: 7, before: '<', after: '>' },
  { id: 2, kind: 'off-by-one', line: 3, col: 12, before: '1', after: '2' },
  { id: 3, kind: 'arith-op', line: 9, col: 4, before: '+', after: '-' },
];
const observation = repairObservation({
  moduleLineCount: 10,
  functions: [
    { name: 'inner', start: 1, end: 5 },
    { name: 'outer', start: 7, end: 10 },
  ],
  turn: 6,
  maxTurns: 12,
  baselineTests: { passed: false, passedCount: 1, failedCount: 3, moduleLines: [3], calledNames: ['outer'], failureKinds: ['IndexError', 'IndexError', 'AssertionError'], lineSpectrum: [] },
  edits,
  tried: [0],
  lastTool: 'revert',
});

test('per-candidate features cover the failure, its location and the episode so far', () => {
  const rows = candidateFeatures(edits.slice(1), observation);
  assert.equal(rows.length, 3);
  for (const row of rows) assert.equal(row.length, ONNX_REPAIR_FEATURE_NAMES.length);
  const feature = (row: number, name: string): number => rows[row]![ONNX_REPAIR_FEATURE_NAMES.indexOf(name)]!;
  // Same kind, line and token as the failed edit 0.
  assert.equal(feature(0, 'same-kind-tried'), 0.5);
  assert.equal(feature(0, 'same-line-tried'), 1);
  assert.equal(feature(0, 'same-site-tried'), 1);
  // Same line, another token and kind.
  assert.deepEqual([feature(1, 'same-kind-tried'), feature(1, 'same-line-tried'), feature(1, 'same-site-tried')], [0, 1, 0]);
  // The traceback passed through `inner` (line 3); the failing assertion called `outer`.
  assert.deepEqual([feature(1, 'in-failing-function'), feature(2, 'in-failing-function')], [1, 0]);
  assert.deepEqual([feature(1, 'in-called-function'), feature(2, 'in-called-function')], [0, 1]);
  for (const row of [0, 1, 2]) {
    assert.equal(feature(row, 'failure:lookup'), 2 / 3);
    assert.equal(feature(row, 'failure:assertion'), 1 / 3);
    assert.equal(feature(row, 'failure:other'), 0);
    assert.equal(feature(row, 'failing-fraction'), 3 / 4);
    assert.equal(feature(row, 'tried-fraction'), 1 / 4);
    assert.equal(feature(row, 'turns-left'), 0.5);
    assert.equal(feature(row, 'no-traceback-line'), 0);
  }
  assert.deepEqual(rows[2]!.slice(0, FEATURE_NAMES.length).length, FEATURE_NAMES.length, 'starts with the linear policy features');
});

test('an unknown exception counts as other; a failure with no module line in its traceback says so', () => {
  const rows = candidateFeatures(edits, { ...observation, baselineTests: { ...observation.baselineTests!, moduleLines: [], failureKinds: ['Failed'] } });
  const index = (name: string): number => ONNX_REPAIR_FEATURE_NAMES.indexOf(name);
  assert.equal(rows[0]![index('failure:other')], 1);
  assert.equal(rows[0]![index('no-traceback-line')], 1);
  assert.equal(rows[0]![index('in-failing-function')], 0);
});

test('whole tokens are counted: an operator inside a longer one, a digit inside a number or name, blank text never', () => {
  const count = tokenCounter('a1 = 1 + 10\nif x <= y < z << 2 and not done:\n    n -= 1 - m\n');
  assert.deepEqual([count('<'), count('<='), count('1'), count('-'), count('-='), count('not '), count('no'), count('')], [1, 1, 2, 1, 1, 1, 0, 0]);
});

test("an edit's text against the module: whether it shortens or lengthens, and whether the module uses its new or its old text elsewhere", () => {
  const moduleSource = 'def f(a, b):\n    if not a < b:\n        return a - b\n    return b - a + 1\n';
  const textEdits = [
    { id: 0, kind: 'negation', line: 2, col: 7, before: 'not ', after: '' },
    { id: 1, kind: 'compare-op', line: 2, col: 13, before: '<', after: '<=' },
    { id: 2, kind: 'arith-op', line: 4, col: 17, before: '+', after: '-' },
    { id: 3, kind: 'arith-op', line: 3, col: 17, before: '-', after: '+' },
  ];
  const rows = candidateFeatures(textEdits, repairObservation({ moduleSource, moduleLineCount: 5, edits: textEdits }));
  const column = (name: string): number[] => rows.map((row) => row[ONNX_REPAIR_FEATURE_NAMES.indexOf(name)]!);
  assert.deepEqual(column('shortens'), [1, 0, 0, 0]);
  assert.deepEqual(column('lengthens'), [0, 1, 0, 0]);
  // Neither text of the negation or the compare occurs elsewhere: no evidence (0.5). Edit 2's `-` occurs twice
  // elsewhere and its `+` nowhere else; edit 3's `-` once more, against one `+`.
  assert.deepEqual(column('after-familiar'), [0.5, 0.5, 1, 0.5]);
  assert.deepEqual(column('before-only-here'), [1, 1, 1, 0]);
});

test("the first run's line spectrum: Ochiai's suspiciousness of the edit's line, whether no line offered is more suspicious, and whether no failing test ran it", () => {
  // Two failing tests, one passing: line 3 runs in both failing tests only, line 2 in every test, line 9 in the passing one.
  const run = { ...observation.baselineTests!, failedCount: 2, passedCount: 1, lineSpectrum: [
    { line: 2, failing: 2, passing: 1 },
    { line: 3, failing: 2, passing: 0 },
    { line: 9, failing: 0, passing: 1 },
  ] };
  const suspiciousness = lineSuspiciousness(run);
  assert.deepEqual([suspiciousness(2), suspiciousness(3), suspiciousness(9), suspiciousness(5)], [2 / Math.sqrt(2 * 3), 1, 0, 0]);
  const rows = candidateFeatures(edits, { ...observation, tried: [], baselineTests: run });
  const column = (name: string): number[] => rows.map((row) => row[ONNX_REPAIR_FEATURE_NAMES.indexOf(name)]!);
  // Edits 0-2 sit on line 3, edit 3 on line 9.
  assert.deepEqual(column('line-suspiciousness'), [1, 1, 1, 0]);
  assert.deepEqual(column('most-suspicious-line'), [1, 1, 1, 0]);
  assert.deepEqual(column('not-run-by-failing'), [0, 0, 0, 1]);
  // Without a spectrum (a run killed at its timeout) nothing is said.
  const none = candidateFeatures(edits, { ...observation, baselineTests: { ...run, lineSpectrum: [] } });
  for (const name of ['line-suspiciousness', 'most-suspicious-line', 'not-run-by-failing']) assert.ok(none.every((row) => row[ONNX_REPAIR_FEATURE_NAMES.indexOf(name)] === 0), name);
});
