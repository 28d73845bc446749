import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ConfigError } from '../../../schemas/index.js';
import { noChoiceLabel, taskLabel } from '../../../test/fixtures/ceiling-labels.js';
import { appendLabel, readLabels } from './labels-file.js';

const dir = mkdtempSync(join(tmpdir(), 'trialrun-ceiling-labels-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const fresh = (): string => join(dir, `run-${files++}`, 'labels.jsonl');

const refused = (path: string, pattern: RegExp) => (error: unknown) => error instanceof ConfigError && error.message.startsWith(path) && pattern.test(error.message);

test('labels read back as they were appended, one line a task, the later line winning', () => {
  const path = fresh();
  assert.equal(readLabels(path).size, 0, 'a file not yet written holds no labels');
  const first = taskLabel('t', ['fail', 'pass', 'solve']);
  const none = noChoiceLabel('n', { reason: 'the visible tests pass unedited', submitsAtTurn: 2, solves: true });
  appendLabel(path, first);
  appendLabel(path, none);
  assert.deepEqual([...readLabels(path).entries()], [
    ['t', first],
    ['n', none],
  ]);
  const relabelled = { ...taskLabel('t', ['solve', 'fail']), moduleSha256: 'f'.repeat(64) };
  appendLabel(path, relabelled);
  assert.equal(readFileSync(path, 'utf8').trim().split('\n').length, 3);
  assert.deepEqual(readLabels(path).get('t'), relabelled);
  assert.equal(readLabels(path).size, 2);
});

test('a line that is not a label is an error naming the file, the line and what is wrong', () => {
  const path = fresh();
  appendLabel(path, taskLabel('t', ['fail', 'solve']));
  appendFileSync(path, '{"taskId": "cut\n');
  assert.throws(() => readLabels(path), refused(path, /line 2 is not JSON/));

  const wrong = (mutate: (label: Record<string, unknown>) => void, pattern: RegExp): void => {
    const bad = fresh();
    const label = structuredClone(taskLabel('u', ['fail', 'solve'])) as unknown as Record<string, unknown>;
    mutate(label);
    appendLabel(bad, taskLabel('t', ['solve']));
    appendFileSync(bad, `\n${JSON.stringify(label)}\n`);
    assert.throws(() => readLabels(bad), refused(bad, pattern));
  };
  wrong((label) => delete label.moduleSha256, /line 3 is not a task label: moduleSha256/);
  wrong((label) => ((label.candidates as { solves: boolean }[])[0]!.solves = true), /line 3 .*candidates\.0: edit 0 solves without passing the visible tests/);
  wrong((label) => (label.candidates as unknown[]).pop(), /line 3 .*candidates: must label the listed edits 0,1 in order/);
  wrong((label) => (label.noChoice = { reason: 'r', submitsAtTurn: 2, solves: false }), /line 3 .*exactly one of observation and noChoice/);
  wrong((label) => ((label.observation as { turn: unknown }).turn = 'two'), /line 3 .*observation\.turn/);
});

test('appendLabel refuses a label the reader would refuse', () => {
  const path = fresh();
  const bad = { ...taskLabel('t', ['fail']), candidates: [{ id: 0, visiblePass: false, solves: true }] };
  assert.throws(() => appendLabel(path, bad), (error: unknown) => error instanceof ConfigError && /label of t is malformed/.test(error.message));
  assert.equal(readLabels(path).size, 0);
});

test('a line of an older label format is passed over, so its task is labelled again', () => {
  const path = fresh();
  appendLabel(path, taskLabel('t', ['solve']));
  const { format: _format, ...older } = taskLabel('old', ['fail', 'solve']);
  appendFileSync(path, `${JSON.stringify(older)}\n`);
  assert.deepEqual([...readLabels(path).keys()], ['t']);
});
