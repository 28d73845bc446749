import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { RepairObservation } from '../../envs/index.js';
import { clampEdits, failingRun, repairObservation } from '../../test/fixtures/repair-observation.js';
import { seededRandom } from '../types.js';
import { ONNX_REPAIR_FEATURE_NAMES } from './features.js';
import { initialParams } from './params.js';
import { OnnxRepairPolicy, OnnxScorer } from './policy.js';
import { referenceLogProbs } from './reference.js';

let scorer: OnnxScorer;
before(async () => {
  scorer = await OnnxScorer.create();
});
after(async () => {
  await scorer.release();
});

const base = repairObservation();
const listed = repairObservation({ lastTests: failingRun, baselineTests: failingRun, edits: clampEdits });

test('the scripted loop around a choice the MLP makes; the untrained policy picks uniformly', async () => {
  const policy = new OnnxRepairPolicy(0, initialParams('policy'), scorer);
  const random = seededRandom('s');
  const name = async (o: RepairObservation): Promise<string> => (await policy.act(o, random)).action.name;
  assert.equal(await name(base), 'run_tests');
  assert.equal(await name({ ...base, lastTests: failingRun, baselineTests: failingRun }), 'list_edits');
  const pick = await policy.act(listed, random);
  assert.equal(pick.action.name, 'apply_edit');
  assert.equal(pick.decision?.features.length, 3);
  assert.equal(pick.decision?.features[0]?.length, ONNX_REPAIR_FEATURE_NAMES.length);
  assert.ok(Math.abs(pick.decision!.logprob - Math.log(1 / 3)) < 1e-6);
  assert.equal(await name({ ...listed, applied: clampEdits[0]!, lastTests: null }), 'run_tests');
  assert.equal(await name({ ...listed, tried: [0, 1, 2] }), 'submit', 'nothing left to try');
  const narrowed = await policy.act({ ...listed, tried: [0, 2] }, random);
  assert.deepEqual(narrowed.action.arguments, { id: 1 }, 'only untried edits are candidates');
});

test('a trained policy samples from the MLP scores, reproducibly', async () => {
  const params = initialParams('trained', { hiddenSize: 6 });
  params.tensors.outputWeights.fill(0.7);
  params.tensors.skipWeights[ONNX_REPAIR_FEATURE_NAMES.indexOf('on-failing-line')] = 3;
  const policy = new OnnxRepairPolicy(4, params, scorer);
  const first = await policy.act(listed, seededRandom('same'));
  const again = await policy.act(listed, seededRandom('same'));
  assert.deepEqual(again, first);
  const expected = referenceLogProbs(params, first.decision!.features);
  assert.ok(Math.abs(first.decision!.logprob - expected[first.decision!.chosen]!) < 1e-5, 'ONNX scores match the reference forward pass');
  const [batched] = await scorer.logProbs(params, [first.decision!.features, [first.decision!.features[0]!]]);
  expected.forEach((value, i) => assert.ok(Math.abs(batched![i]! - value) < 1e-5, 'a padded batch scores each decision alone'));
  assert.ok(expected[0]! > Math.log(0.8), 'the edit on the failing line dominates');
});

test('parameters trained on other features are refused', () => {
  const params = initialParams('other');
  assert.throws(() => new OnnxRepairPolicy(1, { ...params, featureNames: [...ONNX_REPAIR_FEATURE_NAMES].reverse() }, scorer), /other features than this build computes/);
  assert.throws(() => new OnnxRepairPolicy(1, { ...params, hiddenSize: 31 }, scorer), /hiddenWeights has/);
});

test('execution providers are checked against the build', async () => {
  await assert.rejects(OnnxScorer.create({ executionProviders: ['quantum'] }), /OnnxRuntimeOptions\.executionProviders: quantum unknown/);
  await assert.rejects(OnnxScorer.create({ executionProviders: [] }), /at least one provider/);
  await assert.rejects(OnnxScorer.create({ intraOpThreads: -1 }), /OnnxRuntimeOptions\.intraOpThreads/);
});
