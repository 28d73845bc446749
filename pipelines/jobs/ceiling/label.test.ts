import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { ConfigError, type Task } from '../../../schemas/index.js';
import { noChoiceLabel, taskLabel } from '../../../test/fixtures/ceiling-labels.js';
import { checkLabellable, countLabels, moduleSha256 } from './label.js';

function repairTask(taskId: string, overrides: Partial<Task> = {}): Task {
  return {
    taskId,
    envId: 'program-repair/v1',
    title: 't',
    description: 'd',
    files: { 'm.py': 'def f(x):\n    return x + 1\n' },
    visibleTests: { 'test_visible.py': 'from m import f\n\ndef test_f():\n    assert f(1) == 2\n' },
    hiddenTests: { 'test_hidden.py': 'from m import f\n\ndef test_g():\n    assert f(2) == 3\n' },
    referenceSolution: null,
    tags: [],
    priority: 0,
    split: 'train',
    difficulty: null,
    source: { dataset: 'd', datasetHash: 'h', jobRunId: 'j', sourceRow: 1 },
    lineage: { taskId, attempt: 0, runId: 'j', policyVersion: null, sandboxImageDigest: null, verifierVersion: null, createdAt: '2026-01-01T00:00:00.000Z' },
    ...overrides,
  };
}

test('moduleSha256 is the sha256 of the module as the task gives it', () => {
  const task = repairTask('a');
  assert.equal(moduleSha256(task), createHash('sha256').update(task.files['m.py']!).digest('hex'));
  assert.notEqual(moduleSha256(repairTask('a', { files: { 'm.py': 'def f(x):\n    return x + 2\n' } })), moduleSha256(task));
  assert.equal(moduleSha256(repairTask('b')), moduleSha256(task), 'the same module under another id');
});

test('checkLabellable names every task that cannot be labelled, and why', () => {
  assert.doesNotThrow(() => checkLabellable([repairTask('a'), repairTask('b')]));
  assert.throws(() => checkLabellable([]), ConfigError);
  const bad = [
    repairTask('ok'),
    repairTask('ws', { envId: 'workspace/v1' }),
    repairTask('two', { files: { 'a.py': '', 'b.py': '' } }),
    repairTask('blind', { visibleTests: {} }),
    repairTask('ok'),
    repairTask('stored', { stored: { hiddenTests: { digest: `sha256:${'a'.repeat(64)}`, files: 1, bytes: 10 } } }),
  ];
  assert.throws(
    () => checkLabellable(bad),
    (error: unknown) => {
      if (!(error instanceof ConfigError)) return false;
      assert.match(error.message, /^5 of 6 tasks cannot be labelled/);
      assert.match(error.message, /ws: environment workspace\/v1, not program-repair\/v1/);
      assert.match(error.message, /two: .*exactly one module/);
      assert.match(error.message, /blind: .*visible test/);
      assert.match(error.message, /ok: given twice/);
      assert.match(error.message, /stored: its hiddenTests are kept in the artifact store/);
      return true;
    },
  );
});

test('countLabels sums candidates, visible passes, solves and tasks without a choice', () => {
  const labels = [taskLabel('t', ['fail', 'pass', 'solve']), taskLabel('u', ['solve', 'fail']), noChoiceLabel('n', { reason: 'tests pass', submitsAtTurn: 2, solves: true })];
  assert.deepEqual(countLabels(labels), { tasks: 3, candidates: 5, visiblePasses: 3, solves: 2, withoutChoice: 1 });
});
