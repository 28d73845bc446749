import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RepairObservation } from '../../envs/index.js';
import { clampEdits, failingRun, repairObservation } from '../../test/fixtures/repair-observation.js';
import { seededRandom } from '../types.js';
import { editFeatures, FEATURE_NAMES } from './features.js';
import { linearRepairKind } from './kind.js';
import { LinearRepairPolicy } from './policy.js';

const failing = failingRun;
const base = repairObservation();
// Two candidates keep the uniform pick at log(1/2).
const edits = clampEdits.slice(0, 2);

test('the scripted loop: run tests, list edits, apply, rerun, revert or submit', async () => {
  const policy = LinearRepairPolicy.initial();
  const random = seededRandom('s');
  const name = async (o: RepairObservation): Promise<string> => (await policy.act(o, random)).action.name;
  assert.equal(await name(base), 'run_tests');
  const tested = { ...base, lastTests: failing, baselineTests: failing };
  assert.equal(await name(tested), 'list_edits');
  const listed = { ...tested, edits };
  const pick = await policy.act(listed, random);
  assert.equal(pick.action.name, 'apply_edit');
  assert.equal(pick.decision?.features.length, 2);
  assert.equal(pick.decision?.features[0]?.length, FEATURE_NAMES.length);
  assert.ok(Math.abs(pick.decision!.logprob - Math.log(0.5)) < 1e-9, 'zero weights pick uniformly');
  const applied = { ...listed, applied: edits[0]!, lastTests: null };
  assert.equal(await name(applied), 'run_tests');
  assert.equal(await name({ ...applied, lastTests: failing }), 'revert');
  assert.equal(await name({ ...applied, lastTests: { ...failing, passed: true } }), 'submit');
  assert.equal(await name({ ...listed, tried: [0, 1] }), 'submit', 'nothing left to try');
});

test('parameters round-trip through the artifact, and foreign artifacts are refused', async () => {
  const weights = FEATURE_NAMES.map((_, i) => i / 10);
  const bytes = linearRepairKind.encodeParams(weights);
  assert.deepEqual(linearRepairKind.decodeParams(bytes), weights);
  assert.equal((await linearRepairKind.load(weights, 3)).version, 3);
  assert.throws(() => linearRepairKind.decodeParams(Buffer.from(JSON.stringify({ policyId: 'other' }))), /not linear-repair/);
  assert.throws(() => linearRepairKind.decodeParams(Buffer.from(JSON.stringify({ policyId: 'linear-repair', featureNames: ['x'], weights: [1] }))), /features/);
});

test('versions average weight by weight', () => {
  const ones = FEATURE_NAMES.map(() => 1);
  const ramp = FEATURE_NAMES.map((_, i) => i);
  assert.deepEqual(linearRepairKind.average!([ones, ramp]), FEATURE_NAMES.map((_, i) => (1 + i) / 2));
  assert.throws(() => linearRepairKind.average!([]), /at least one/);
  assert.throws(() => linearRepairKind.average!([ones, [1]]), /weights 1 have 1 values/);
});

test('a greedy policy applies its best-scored edit; untrained, it makes the same picks as a sampling one', async () => {
  const listed = { ...base, lastTests: failing, baselineTests: failing, edits };
  const zero = FEATURE_NAMES.map(() => 0);
  const picks = async (policy: LinearRepairPolicy, seed: string): Promise<number[]> => {
    const random = seededRandom(seed);
    const chosen: number[] = [];
    for (let i = 0; i < 20; i++) chosen.push((await policy.act(listed, random)).decision!.chosen);
    return chosen;
  };
  const untrained = await picks(new LinearRepairPolicy(0, zero, 'greedy'), 'g');
  assert.deepEqual(untrained, await picks(new LinearRepairPolicy(0, zero), 'g'));
  assert.ok(new Set(untrained).size === 2, 'tied scores still spread the picks');
  // A weight on a feature where the two edits differ makes the edit with the larger value the best.
  const [first, second] = edits.map((edit) => editFeatures(edit, listed));
  const differs = first!.findIndex((value, i) => value !== second![i]);
  assert.ok(differs >= 0, 'the fixture edits differ in some feature');
  const best = first![differs]! > second![differs]! ? 0 : 1;
  const trained = await linearRepairKind.load(zero.map((_, i) => (i === differs ? 3 : 0)), 1, { decoding: 'greedy' });
  assert.deepEqual(await picks(trained as LinearRepairPolicy, 'g'), Array(20).fill(best));
});
