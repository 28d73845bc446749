import assert from 'node:assert/strict';
import { join } from 'node:path';
import test from 'node:test';
import { ConfigError } from '../../schemas/index.js';
import { resolveCeilingSettings } from './ceiling.js';

// What parseArgs hands over when no option is given: the ones with table defaults.
const given = (values: Record<string, string>) => ({ 'eval-percent': '25', concurrency: '2', ...values });

test('ceiling takes the bundled tasks, a labels file in the data folder and the fit\'s own defaults', () => {
  const settings = resolveCeilingSettings(given({}), '/data');
  assert.match(settings.taskFile, /tasks\/repair-bundle\.jsonl$/);
  assert.equal(settings.labelsFile, join('/data', 'ceiling', 'labels.jsonl'));
  assert.deepEqual([settings.evalPercent, settings.concurrency], [25, 2]);
  assert.deepEqual([settings.fit.steps, settings.fit.learningRate, settings.fit.hiddenSize, settings.fit.seed], [400, 0.03, 32, 'ceiling']);
  const tuned = resolveCeilingSettings(given({ steps: '50', 'learning-rate': '0.1', hidden: '8', seed: 's' }), '/data');
  assert.deepEqual([tuned.fit.steps, tuned.fit.learningRate, tuned.fit.hiddenSize, tuned.fit.seed], [50, 0.1, 8, 's']);
});

test('ceiling refuses bad values by their flags before anything starts', () => {
  const refused = (values: Record<string, string>, pattern: RegExp) => assert.throws(() => resolveCeilingSettings(given(values), '/data'), (error: unknown) => error instanceof ConfigError && pattern.test(error.message));
  refused({ steps: '-1' }, /--steps must be a whole number >= 0/);
  refused({ hidden: '5000' }, /--hidden must be a whole number from 1 to 4096/);
  refused({ 'learning-rate': '0' }, /--learning-rate must be a number > 0/);
  refused({ 'eval-percent': '100' }, /--eval-percent/);
  refused({ concurrency: '0' }, /--concurrency/);
  refused({ labels: '/no/such/folder/labels.jsonl' }, /--labels: no folder/);
  refused({ tasks: '/no/such/tasks.jsonl' }, /--tasks: no such file/);
});
