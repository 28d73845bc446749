import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sha256Hex } from './artifact.js';
import { ONNX_REPAIR_FEATURE_NAMES } from './features.js';
import { PARAM_NAMES } from './graphs.js';
import { averageParams, freshAdamState, initialParams, paramsSha256, parseAdamState, parseParams, serializeAdamState, serializeParams } from './params.js';

test('params round-trip through the artifact bytes, and the digest is verified', () => {
  const params = initialParams('round-trip', { hiddenSize: 7 });
  params.tensors.skipWeights[3] = -0.125;
  const bytes = serializeParams(params);
  const digest = sha256Hex(bytes);
  assert.equal(paramsSha256(params), digest);
  const loaded = parseParams(bytes, digest);
  assert.equal(loaded.hiddenSize, 7);
  assert.deepEqual(loaded.featureNames, ONNX_REPAIR_FEATURE_NAMES);
  for (const name of PARAM_NAMES) assert.deepEqual(loaded.tensors[name], params.tensors[name]);
  assert.deepEqual(serializeParams(loaded), bytes, 'serialising is deterministic');
  assert.notEqual(paramsSha256(initialParams('another seed', { hiddenSize: 7 })), digest);
});

test('the untrained policy is uniform: zero output and skip weights', () => {
  const params = initialParams('uniform');
  assert.equal(params.hiddenSize, 32);
  assert.ok(params.tensors.outputWeights.every((w) => w === 0) && params.tensors.skipWeights.every((w) => w === 0));
  assert.ok(params.tensors.hiddenWeights.some((w) => w !== 0));
  assert.deepEqual(initialParams('uniform').tensors.hiddenWeights, params.tensors.hiddenWeights, 'the seed fixes the draw');
  assert.throws(() => initialParams('x', { hiddenSize: 0 }), /InitialParamsOptions\.hiddenSize/);
});

test('bad artifacts are refused with the reason', () => {
  const params = initialParams('refuse', { hiddenSize: 3 });
  const bytes = serializeParams(params);
  const flipped = Buffer.from(bytes);
  flipped[flipped.length - 1]! ^= 0xff;
  assert.throws(() => parseParams(flipped, sha256Hex(bytes)), /sha256 is [0-9a-f]{64}, expected/);
  assert.throws(() => parseParams(bytes.subarray(0, bytes.length - 4)), /runs past the end/);
  assert.throws(() => parseParams(Buffer.concat([bytes, Buffer.alloc(4)])), /4 bytes follow the last tensor/);
  assert.throws(() => parseParams(Buffer.from('{"weights":[1,2]}')), /does not start with TRTENSOR/);
  const nan = Buffer.from(bytes);
  nan.writeFloatLE(Number.NaN, nan.length - 4);
  assert.throws(() => parseParams(nan), /non-finite value/);
  const renamed = serializeParams({ ...params, featureNames: ONNX_REPAIR_FEATURE_NAMES.map((name, i) => (i === 2 ? 'kind:renamed' : name)) });
  assert.throws(() => parseParams(renamed), /other features than this build computes: feature 2 is "kind:renamed"/);
  assert.throws(() => parseParams(bytes, undefined, ONNX_REPAIR_FEATURE_NAMES.slice(1)), new RegExp(`${ONNX_REPAIR_FEATURE_NAMES.length} features, this build has ${ONNX_REPAIR_FEATURE_NAMES.length - 1}`));
  assert.throws(() => parseParams(serializeAdamState(freshAdamState(params))), /holds onnx-repair\/adam, not onnx-repair\/params/);
});

test('optimizer state round-trips with its step count', () => {
  const params = initialParams('adam', { hiddenSize: 4 });
  const state = { ...freshAdamState(params), step: 12 };
  state.m.hiddenBias[1] = 0.5;
  state.v.skipWeights[0] = 2;
  const loaded = parseAdamState(serializeAdamState(state));
  assert.equal(loaded.step, 12);
  assert.equal(loaded.m.hiddenBias[1], 0.5);
  assert.equal(loaded.v.skipWeights[0], 2);
  assert.throws(() => parseAdamState(serializeParams(params)), /not onnx-repair\/adam/);
});

test('versions average element-wise; parameters of another shape are refused', () => {
  const versions = [initialParams('a', { hiddenSize: 3 }), initialParams('b', { hiddenSize: 3 }), initialParams('c', { hiddenSize: 3 })];
  versions[0]!.tensors.skipWeights[1] = 0.3;
  versions[1]!.tensors.skipWeights[1] = 0.6;
  const mean = averageParams(versions);
  assert.equal(mean.hiddenSize, 3);
  assert.deepEqual(mean.featureNames, ONNX_REPAIR_FEATURE_NAMES);
  assert.ok(Math.abs(mean.tensors.skipWeights[1]! - 0.3) < 1e-7);
  for (const name of PARAM_NAMES) {
    mean.tensors[name].forEach((value, i) => assert.ok(Math.abs(value - versions.reduce((sum, v) => sum + v.tensors[name][i]!, 0) / 3) < 1e-6, `${name}[${i}]`));
  }
  assert.deepEqual(serializeParams(averageParams([versions[2]!])), serializeParams(versions[2]!), 'the mean of one version is that version');
  assert.throws(() => averageParams([]), /at least one/);
  assert.throws(() => averageParams([versions[0]!, initialParams('d', { hiddenSize: 4 })]), /parameters 1 differ in shape from parameters 0 \(4 hidden units, not 3\)/);
  const renamed = { ...versions[1]!, featureNames: ONNX_REPAIR_FEATURE_NAMES.map((name, i) => (i === 0 ? 'kind:renamed' : name)) };
  assert.throws(() => averageParams([versions[0]!, renamed]), /parameters 1 differ in shape .*feature 0 is "kind:renamed"/);
});
