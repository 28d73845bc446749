import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IncompatibleAdapterError, LORA_SAFETENSORS_FORMAT, readLoraArtifact } from './lora-artifact.js';

/** A safetensors file as the format defines it: u64 LE header length, JSON header, tensor bytes. */
function safetensors(header: Record<string, unknown>, data = Buffer.alloc(16)): Buffer {
  const json = Buffer.from(JSON.stringify(header));
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([length, json, data]);
}

const TENSOR = { dtype: 'F32', shape: [2, 2], data_offsets: [0, 16] };
const METADATA = {
  format: LORA_SAFETENSORS_FORMAT,
  peft_config: JSON.stringify({ r: 2, lora_alpha: 4 }),
  base_model: 'smollm2-135m-instruct',
  base_sha256: 'a'.repeat(64),
  policy_version: '3',
  parent_version: '2',
};

test('reads the contract metadata and the tensor names', () => {
  const info = readLoraArtifact(safetensors({ __metadata__: METADATA, 'base_model.model.x.lora_A.weight': TENSOR }));
  assert.deepEqual(info, { peftConfig: { r: 2, lora_alpha: 4 }, baseModel: 'smollm2-135m-instruct', baseSha256: 'a'.repeat(64), policyVersion: 3, parentVersion: 2, tensors: ['base_model.model.x.lora_A.weight'] });
});

test('refuses what is not a contract artifact, naming what is wrong', () => {
  const cases: Array<[Buffer, RegExp]> = [
    [Buffer.from('{}'), /2 bytes is no safetensors file/],
    [Buffer.concat([Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]), Buffer.alloc(8)]), /header length .* runs past/],
    [Buffer.from('\x04\x00\x00\x00\x00\x00\x00\x00{{{{'), /header is not JSON/],
    [safetensors({ t: TENSOR }), /no __metadata__ string map/],
    [safetensors({ __metadata__: { ...METADATA, format: 'onnx' }, t: TENSOR }), /format is "onnx", not "lora-safetensors\/v1"/],
    [safetensors({ __metadata__: { ...METADATA, peft_config: '[1' }, t: TENSOR }), /peft_config is not JSON/],
    [safetensors({ __metadata__: { ...METADATA, base_sha256: 'abc' }, t: TENSOR }), /base_sha256 "abc" is not a sha256/],
    [safetensors({ __metadata__: { ...METADATA, policy_version: '1.5' }, t: TENSOR }), /policy_version "1.5" is not a whole number/],
    [safetensors({ __metadata__: { ...METADATA, policy_version: undefined }, t: TENSOR }), /has no policy_version/],
    [safetensors({ __metadata__: METADATA }), /holds no tensors/],
  ];
  for (const [bytes, reason] of cases) assert.throws(() => readLoraArtifact(bytes), (error: unknown) => error instanceof IncompatibleAdapterError && reason.test(error.message));
});
