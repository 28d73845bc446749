import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nodeId, parseJunit } from './junit.js';

const REPORT = `<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="1" skipped="1" tests="4">
<testcase classname="test_hidden" name="test_ok" time="0.001" />
<testcase classname="test_hidden" name="test_bad[1-2]" time="0.010"><failure message="assert 1 == 2">trace</failure></testcase>
<testcase classname="test_hidden.TestGroup" name="test_skip" time="0"><skipped message="why &amp; not" /></testcase>
<testcase classname="test_hidden" name="test_err" time="0.5"><error message="boom">x</error></testcase>
</testsuite></testsuites>`;

test('parses outcomes, durations and messages into pytest node ids', () => {
  const cases = parseJunit(REPORT)!;
  assert.deepEqual(
    cases.map((c) => [c.id, c.outcome, c.durationMs, c.message]),
    [
      ['test_hidden.py::test_ok', 'passed', 1, null],
      ['test_hidden.py::test_bad[1-2]', 'failed', 10, 'assert 1 == 2'],
      ['test_hidden.py::TestGroup::test_skip', 'skipped', 0, 'why & not'],
      ['test_hidden.py::test_err', 'error', 500, 'boom'],
    ],
  );
});

test('anything that is not a JUnit report gives null', () => {
  assert.equal(parseJunit(''), null);
  assert.equal(parseJunit('all tests passed!'), null);
});

test('node ids from classnames', () => {
  assert.equal(nodeId('test_a.TestX', 'test_y'), 'test_a.py::TestX::test_y');
});
