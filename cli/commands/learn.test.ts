import assert from 'node:assert/strict';
import test from 'node:test';
import { ConfigError } from '../../schemas/index.js';
import { resolveLearnSettings } from './learn.js';

// What parseArgs hands over when only --policy is given: the options that have defaults.
const given = (values: Record<string, string>) => ({ minutes: '20', 'eval-samples': '2', 'eval-concurrency': '2', 'eval-percent': '25', 'max-turns': '8', workers: '2', verifiers: '2', epochs: '1', policy: 'onnx-repair', 'eval-decoding': 'greedy', 'tail-average': '0.5', ...values });

test('learn defaults to groups of 8 and batches of 16 for the scripted policies, 4 and 8 for the llm', () => {
  const onnx = resolveLearnSettings(given({}));
  assert.deepEqual([onnx.groupSize, onnx.batchSize, onnx.evalSamples, onnx.learningRate, onnx.evalSeed], [8, 16, 2, 0.1, undefined]);
  const llm = resolveLearnSettings(given({ policy: 'llm' }));
  assert.deepEqual([llm.groupSize, llm.batchSize, llm.learningRate], [4, 8, undefined]);
});

test('learn takes the group, batch and held-out seed it is given, and refuses a bad size', () => {
  const tuned = resolveLearnSettings(given({ 'group-size': '4', 'batch-size': '8', 'eval-seed': 'seed-2' }));
  assert.deepEqual([tuned.groupSize, tuned.batchSize, tuned.evalSeed], [4, 8, 'seed-2']);
  assert.equal(resolveLearnSettings(given({ epochs: '3' })).epochs, 3);
  assert.equal(resolveLearnSettings(given({})).evalDecoding, 'greedy');
  assert.equal(resolveLearnSettings(given({ 'eval-decoding': 'sample' })).evalDecoding, 'sample');
  assert.equal(resolveLearnSettings(given({ 'tail-average': '0' })).tailAverage, 0);
  assert.throws(() => resolveLearnSettings(given({ 'tail-average': '2' })), (error: unknown) => error instanceof ConfigError && /--tail-average must be a number >= 0 and <= 1/.test(error.message));
  assert.throws(() => resolveLearnSettings(given({ 'eval-decoding': 'top-k' })), (error: unknown) => error instanceof ConfigError && /--eval-decoding/.test(error.message));
  assert.throws(() => resolveLearnSettings(given({ epochs: '0' })), (error: unknown) => error instanceof ConfigError && /--epochs must be a whole number >= 1/.test(error.message));
  assert.throws(() => resolveLearnSettings(given({ 'group-size': '0' })), (error: unknown) => error instanceof ConfigError && /--group-size must be a whole number >= 1/.test(error.message));
});
