import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_CASE_MESSAGE_CHARS, MAX_SUITE_DEPTH, MAX_TESTCASES, nodeId, parseJunit } from './junit.js';

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

test('tests in subfolders get node ids from the file attribute, or from the run\'s module list', () => {
  const xml = `<testsuites><testsuite name="pytest">
<testcase classname="tests.unit.test_x.TestC" name="test_a" file="tests/unit/test_x.py" line="3" time="0.1"/>
<testcase classname="tests.test_y" name="test_b" time="0.1"/>
</testsuite></testsuites>`;
  assert.deepEqual(parseJunit(xml, { style: 'pytest', modules: ['tests/test_y.py'] })!.map((c) => c.id), ['tests/unit/test_x.py::TestC::test_a', 'tests/test_y.py::test_b']);
  assert.equal(nodeId('tests.test_y.TestK', 'test_c', null, ['tests/test_y.py']), 'tests/test_y.py::TestK::test_c');
  // A test inherited from another module: the file names where it was defined, the module list where it ran.
  assert.equal(nodeId('tests.test_y.TestK', 'test_c', 'tests/base.py', ['tests/test_y.py']), 'tests/test_y.py::TestK::test_c');
});

test('generic ids are classname::name, from nested suites (jest-junit, go-junit-report)', () => {
  const xml = `<?xml version="1.0"?>
<testsuites name="jest tests"><testsuite name="sum"><testsuite name="inner">
<testcase classname="sum adds" name="adds 1 + 2" time="0.002"/></testsuite>
<testcase classname="" name="bare"><failure>expected 3</failure></testcase></testsuite></testsuites>`;
  assert.deepEqual(
    parseJunit(xml, { style: 'generic' })!.map((c) => [c.id, c.outcome]).sort(),
    [['bare', 'failed'], ['sum adds::adds 1 + 2', 'passed']],
  );
  // A single testsuite root, as go-junit-report writes for one package.
  assert.deepEqual(parseJunit('<testsuite name="pkg"><testcase classname="pkg" name="TestX"/></testsuite>', { style: 'generic' })!.map((c) => c.id), ['pkg::TestX']);
});

test('anything that is not a well-formed JUnit report gives null; an empty one gives no cases', () => {
  assert.equal(parseJunit(''), null);
  assert.equal(parseJunit('all tests passed!'), null);
  assert.equal(parseJunit('<testsuites><testsuite><testcase name="x"></testsuite></testsuites>'), null);
  assert.equal(parseJunit('<html><body>testsuite</body></html>'), null);
  assert.deepEqual(parseJunit('<testsuites/>'), []);
  // Attribute text that a regex would have taken for markup.
  assert.deepEqual(parseJunit('<testsuites><testsuite><testcase classname="m" name="a&gt;b &lt;testcase name=&quot;fake&quot;/&gt;"/></testsuite></testsuites>')!.map((c) => c.id), ['m.py::a>b <testcase name="fake"/>']);
});

test('node ids from root-level classnames', () => {
  assert.equal(nodeId('test_a.TestX', 'test_y'), 'test_a.py::TestX::test_y');
});

test('a report past a bound is no report: a DOCTYPE with entities, suites nested too deep, too many testcases; messages are cut', () => {
  const entities = `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><testsuites><testsuite><testcase classname="t" name="x"><failure message="&b;"/></testcase></testsuite></testsuites>`;
  assert.equal(parseJunit(entities), null);
  const nested = (depth: number) => `<testsuites>${'<testsuite>'.repeat(depth)}<testcase classname="t" name="x"/>${'</testsuite>'.repeat(depth)}</testsuites>`;
  assert.equal(parseJunit(nested(MAX_SUITE_DEPTH))?.length, 1);
  assert.equal(parseJunit(nested(MAX_SUITE_DEPTH + 1)), null);
  assert.equal(parseJunit(nested(100_000)), null, 'nesting past the parser\'s stack fails the report, not the process');
  const many = (count: number) => `<testsuites><testsuite>${'<testcase classname="t" name="x"/>'.repeat(count)}</testsuite></testsuites>`;
  assert.equal(parseJunit(many(MAX_TESTCASES + 1)), null);
  const long = parseJunit(`<testsuites><testsuite><testcase classname="t" name="x"><failure message="${'m'.repeat(10_000)}"/></testcase></testsuite></testsuites>`)!;
  assert.equal(long[0]!.message!.length, MAX_CASE_MESSAGE_CHARS);
});
