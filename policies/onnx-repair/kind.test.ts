import assert from 'node:assert/strict';
import { test } from 'node:test';
import { failingRun, repairObservation } from '../../test/fixtures/repair-observation.js';
import { seededRandom } from '../types.js';
import { createOnnxRepairKind } from './kind.js';

const failing = { ...failingRun, moduleLines: [2], failureKinds: ['IndexError'] };
const observation = repairObservation({
  moduleLineCount: 4,
  turn: 2,
  lastTests: failing,
  baselineTests: failing,
  edits: [
    { id: 0, kind: 'off-by-one', line: 2, col: 14, before: '1', after: '0' },
    { id: 1, kind: 'arith-op', line: 2, col: 13, before: '+', after: '-' },
  ],
  lastTool: 'list_edits',
});

test('as a policy kind: train a version, store its bytes, load it, act with it', async () => {
  const kind = createOnnxRepairKind({ hiddenSize: 8 });
  const { params, optimizer } = kind.initial();
  const v0 = await kind.load(params, 0);
  const { decision } = await v0.act(observation, seededRandom('kind'));
  assert.ok(Math.abs(decision!.logprob - Math.log(0.5)) < 1e-6);
  const step = await kind.update(params, optimizer, [{ advantage: 1, weight: 1, decisions: [decision!] }], { learningRate: 0.1 });
  assert.ok(step.gradNorm > 0);
  const v1 = await kind.load(kind.decodeParams(kind.encodeParams(step.params)), 1);
  assert.equal(v1.version, 1);
  // Picks the first candidate (random 0), whose probability rose if it was the rewarded choice and fell otherwise.
  const first = Math.exp((await v1.act(observation, () => 0)).decision!.logprob);
  assert.ok(decision!.chosen === 0 ? first > 0.5 : first < 0.5, `p(first edit) = ${first} after rewarding edit ${decision!.chosen}`);
  const resumed = kind.decodeOptimizer(kind.encodeOptimizer(step.optimizer));
  assert.equal(resumed.step, 1);
  assert.deepEqual(resumed.m.skipWeights, step.optimizer.m.skipWeights);
  assert.deepEqual(kind.inlineWeights(step.params), []);
});

test('bad kind options are refused when the kind is made', () => {
  assert.throws(() => createOnnxRepairKind({ executionProviders: ['tpu'] }), /OnnxRuntimeOptions\.executionProviders: tpu unknown/);
  assert.throws(() => createOnnxRepairKind({ hiddenSize: 1.5 }), /InitialParamsOptions\.hiddenSize/);
});
