import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../../schemas/index.js';
import { LEARNER_DEFAULTS, resolveLearner } from './options.js';

const refused = (pattern: RegExp) => (error: unknown) => error instanceof ConfigError && pattern.test(error.message);

test("a learner with no settings gets every default, the step size and clip left to the policy kind", () => {
  assert.deepEqual(resolveLearner({}), { ...LEARNER_DEFAULTS, learningRate: undefined, clip: undefined });
});

test('given settings are kept', () => {
  const resolved = resolveLearner({ policyId: 'onnx-repair', batchSize: 8, maxStaleness: 0, staleSamples: 'importance-weight', learningRate: 0.05, clip: 0.1, epochs: 3, instanceId: 'b' });
  assert.deepEqual(resolved, { policyId: 'onnx-repair', batchSize: 8, maxStaleness: 0, staleSamples: 'importance-weight', learningRate: 0.05, clip: 0.1, epochs: 3, instanceId: 'b' });
});

test('each bad setting is a ConfigError naming its option', () => {
  assert.throws(() => resolveLearner({ batchSize: 0 }), refused(/^LearnerOptions\.batchSize must be a whole number >= 1, got 0$/));
  assert.throws(() => resolveLearner({ epochs: 1.5 }), refused(/^LearnerOptions\.epochs /));
  assert.throws(() => resolveLearner({ maxStaleness: -1 }), refused(/^LearnerOptions\.maxStaleness must be a whole number >= 0/));
  assert.throws(() => resolveLearner({ staleSamples: 'keep' as 'drop' }), refused(/^LearnerOptions\.staleSamples must be one of drop, importance-weight, got "keep"$/));
  assert.throws(() => resolveLearner({ learningRate: 0 }), refused(/^LearnerOptions\.learningRate must be a number > 0, got 0$/));
  assert.throws(() => resolveLearner({ clip: Number.NaN }), refused(/^LearnerOptions\.clip /));
  // The llm policy is trained outside this process: its kind needs server settings a learner never has.
  assert.throws(() => resolveLearner({ policyId: 'llm' }), ConfigError);
});
