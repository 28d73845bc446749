import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ExecResult } from '../../../connectors/sandbox/index.js';
import { gradedIds, hostOnlyFiles, judgeGraded, readReward, type GradedCheck } from './index.js';
import { RunnerResult } from '../judge.js';

const setup = RunnerResult.parse({ undumpable: true });
const exec = (fields: Partial<ExecResult> = {}): ExecResult => ({ status: 'exited', exitCode: 0, stdout: '', stderr: '', truncated: false, durationMs: 5, ...fields });

const command: GradedCheck = { kind: 'tests', runner: 'command', command: ['make', 'test'], junitPath: 'junit.xml', failToPass: ['suite::a'], passToPass: ['suite::b'] };
const junit = (cases: string) => ({ text: `<testsuites><testsuite name="s">${cases}</testsuite></testsuites>` });

test('the ids a check is judged on: listed tests, one per output check, the reward', () => {
  assert.deepEqual(gradedIds(command), ['suite::a', 'suite::b']);
  assert.deepEqual(gradedIds({ kind: 'script', command: ['x'] }), ['reward']);
  const output: GradedCheck = { kind: 'output', checks: [{ type: 'content', path: 'a', expectedFile: 'exp/a' }, { type: 'json-schema', stdout: true, schema: {} }] };
  assert.deepEqual(gradedIds(output), ['check[0]:content:a', 'check[1]:json-schema:stdout']);
  assert.deepEqual([...hostOnlyFiles(output)], ['exp/a']);
});

test('a test command: listed ids decide, a missing one fails; without lists every reported test must pass', async () => {
  const both = await judgeGraded(command, setup, { exec: exec({ exitCode: 1 }), report: junit('<testcase classname="suite" name="a"/><testcase classname="suite" name="b"/><testcase classname="suite" name="c"><failure/></testcase>') }, gradedIds(command), [], {});
  assert.deepEqual([both.passed, both.fraction, both.failure], [true, 1, null]);
  const missing = await judgeGraded(command, setup, { exec: exec(), report: junit('<testcase classname="suite" name="a"/>') }, gradedIds(command), [], {});
  assert.deepEqual([missing.passed, missing.fraction, missing.tests.map((t) => t.outcome)], [false, 0.5, ['passed', 'missing']]);
  const unlisted = { ...command, failToPass: [], passToPass: [] };
  const all = await judgeGraded(unlisted, setup, { exec: exec(), report: junit('<testcase classname="suite" name="a"/><testcase classname="suite" name="c"><failure/></testcase>') }, [], [], {});
  assert.deepEqual([all.passed, all.tests.map((t) => t.id)], [false, ['suite::a', 'suite::c']]);
  const empty = await judgeGraded(unlisted, setup, { exec: exec(), report: junit('') }, [], [], {});
  assert.equal(empty.failure, 'nothing-ran');
});

test('a test command that times out, writes no report or a malformed one says so with its end', async () => {
  const late = await judgeGraded(command, setup, { exec: exec({ status: 'timeout', exitCode: null }), report: { problem: 'the test command wrote no JUnit report at junit.xml' } }, gradedIds(command), [], {});
  assert.deepEqual([late.passed, late.failure], [false, 'timeout']);
  const broken = await judgeGraded(command, setup, { exec: exec({ exitCode: 2, stderr: 'boom\n' }), report: { text: '<testsuites><testcase' } }, gradedIds(command), [], {});
  assert.equal(broken.failure, 'no-report');
  assert.match(broken.detail ?? '', /not well-formed JUnit XML; the command exited with status 2: boom/);
});

test('reward files: reward.txt first, reward.json by its reward key; anything else is a failure naming what was wrong', () => {
  assert.deepEqual(readReward({ txt: { text: ' 0.75\n' } }), { reward: 0.75, from: 'reward.txt' });
  assert.deepEqual(readReward({ json: { text: '{"reward": 1, "cases": 3}' } }), { reward: 1, from: 'reward.json' });
  assert.match((readReward({ txt: { text: '0.5 0.5' } }) as { problem: string }).problem, /not one number/);
  assert.match((readReward({ txt: { text: 'NaN' } }) as { problem: string }).problem, /not one number/);
  assert.match((readReward({ txt: { text: '-0.1' } }) as { problem: string }).problem, /outside \[0, 1\]/);
  assert.match((readReward({ json: { text: '[1]' } }) as { problem: string }).problem, /no numeric "reward" key/);
  assert.match((readReward({ json: { text: '{"reward": "1"}' } }) as { problem: string }).problem, /no numeric "reward" key/);
  assert.match((readReward({ json: { text: 'reward=1' } }) as { problem: string }).problem, /not JSON/);
  assert.match((readReward({}) as { problem: string }).problem, /wrote neither reward\.txt nor reward\.json/);
});

test('a script passes at its threshold; a setup that failed or a flag from it fails the verification', async () => {
  const script: GradedCheck = { kind: 'script', command: ['grade'], passThreshold: 0.5 };
  const half = await judgeGraded(script, setup, { exec: exec(), rewardFiles: { txt: { text: '0.5' } } }, ['reward'], [], {});
  assert.deepEqual([half.passed, half.fraction, half.tests[0]!.outcome], [true, 0.5, 'passed']);
  const flagged = RunnerResult.parse({ undumpable: true, static: [{ kind: 'shadowed-module', path: 'json.py', line: null, evidence: 'shadows the installed module json' }] });
  const shadowed = await judgeGraded(script, flagged, { exec: exec(), rewardFiles: { txt: { text: '1' } } }, ['reward'], [], {});
  assert.deepEqual([shadowed.passed, shadowed.hacks.map((h) => h.kind)], [false, ['shadowed-module']]);
  const unset = await judgeGraded(script, RunnerResult.parse({ undumpable: true, setupError: 'OSError: no space' }), null, ['reward'], [], {});
  assert.deepEqual([unset.passed, unset.failure, unset.tests[0]!.outcome], [false, 'crash', 'missing']);
  assert.match(unset.detail ?? '', /could not be set up: OSError: no space/);
});

test('output checks: a command that fails fails the verification, its checks still reported for partial credit', async () => {
  const output: GradedCheck = { kind: 'output', command: ['python3', 'report.py'], checks: [{ type: 'content', path: 'a.txt', expected: 'x' }, { type: 'content', stdout: true, expected: 'done' }] };
  const targets = new Map([['a.txt', { text: 'x\n' }], ['stdout', { text: 'oops' }]]);
  const crashed = await judgeGraded(output, setup, { exec: exec({ exitCode: 1, stderr: 'Traceback\nValueError: bad\n' }), targets }, gradedIds(output), [], {});
  assert.deepEqual([crashed.passed, crashed.failure, crashed.fraction], [false, 'crash', 0.5]);
  assert.match(crashed.detail ?? '', /exited with status 1: Traceback \| ValueError: bad/);
});

test('a reward.json nested past the bound, or too large, is a problem saying so, not a thrown error', () => {
  const deep = readReward({ json: { text: `{"reward": 1, "x": ${'['.repeat(100_000)}${']'.repeat(100_000)}}` } });
  assert.ok('problem' in deep && /nests deeper than 128 levels/.test(deep.problem), JSON.stringify(deep));
  const big = readReward({ json: { text: `{"reward": 1, "x": "${'x'.repeat(17 * 1024 * 1024)}"}` } });
  assert.ok('problem' in big && /above the 16777216 bytes read/.test(big.problem));
});
