import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ArtifactIntegrityError, IncompatibleAdapterError, LocalCheckpointStore, LORA_SAFETENSORS_FORMAT } from '../../connectors/checkpoints/index.js';
import type { ServedAdapter, WeightServer } from '../../connectors/llm/index.js';
import { CheckpointRecordError, ConfigError, nowIso, type PolicyCheckpoint } from '../../schemas/index.js';
import { resolveWeightSyncOptions, serveBaseModel, verifiedAdapter } from './sync.js';

const BASE = 'b'.repeat(64);

function loraArtifact(metadata: Record<string, string>): Buffer {
  const json = Buffer.from(JSON.stringify({ __metadata__: metadata, 'base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight': { dtype: 'F32', shape: [1, 1], data_offsets: [0, 4] } }));
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([length, json, Buffer.alloc(4)]);
}
const metadata = (version: number, base = BASE) => ({ format: LORA_SAFETENSORS_FORMAT, peft_config: '{"r":1,"lora_alpha":2}', base_model: 'm', base_sha256: base, policy_version: String(version), parent_version: String(version - 1) });

const server = (base: string | null): WeightServer => ({
  kind: 'llama.cpp',
  baseSha256: async () => base,
  serve: async (_adapter: ServedAdapter | null) => {},
  servedVersion: async () => 0,
});

async function stored(version: number, bytes: Buffer): Promise<{ store: LocalCheckpointStore; checkpoint: PolicyCheckpoint }> {
  const store = new LocalCheckpointStore(mkdtempSync(join(tmpdir(), 'trialrun-sync-')));
  const artifact = await store.put('llm', version, bytes, LORA_SAFETENSORS_FORMAT);
  const checkpoint: PolicyCheckpoint = {
    policyId: 'llm', version, parentVersion: version - 1, featureNames: [], weights: [], sha256: artifact.sha256, artifact,
    metrics: { samples: 1, meanReward: 0, meanAbsAdvantage: 0, gradNorm: 0, staleDropped: 0, extra: {} },
    lineage: { taskId: 'all', attempt: 0, runId: 'r', policyVersion: version, sandboxImageDigest: null, verifierVersion: null, createdAt: nowIso() },
  };
  return { store, checkpoint };
}

test('a checkpoint whose artifact is a contract adapter of its version, on the served base, is verified', async () => {
  const { store, checkpoint } = await stored(2, loraArtifact(metadata(2)));
  const adapter = await verifiedAdapter(checkpoint, store, server(BASE));
  assert.equal(adapter.version, 2);
  assert.equal(adapter.info.baseSha256, BASE);
  // A server that does not know its base (vLLM without --base-sha256) checks everything else.
  assert.equal((await verifiedAdapter(checkpoint, store, server(null))).version, 2);
});

test('each reason a checkpoint cannot be applied is its own non-retriable error, naming what was wrong', async () => {
  const { store, checkpoint } = await stored(2, loraArtifact(metadata(2)));
  const cases: Array<[PolicyCheckpoint, WeightServer, new (...args: never[]) => Error, RegExp]> = [
    [{ ...checkpoint, artifact: null }, server(BASE), CheckpointRecordError, /v2 has no artifact/],
    [{ ...checkpoint, sha256: 'c'.repeat(64) }, server(BASE), CheckpointRecordError, /record's sha256 c{64} is not its artifact's/],
    [{ ...checkpoint, version: 0, artifact: null }, server(BASE), IncompatibleAdapterError, /v0 is the base model, not an adapter/],
    [{ ...checkpoint, artifact: { ...checkpoint.artifact!, format: 'onnx/v1' } }, server(BASE), IncompatibleAdapterError, /format "onnx\/v1" is not lora-safetensors\/v1/],
    [{ ...checkpoint, artifact: { ...checkpoint.artifact!, sha256: 'd'.repeat(64) }, sha256: 'd'.repeat(64) }, server(BASE), ArtifactIntegrityError, /fails its sha256 check/],
    [checkpoint, server('e'.repeat(64)), IncompatibleAdapterError, /trained on base weights sha256 b{64}; the llama\.cpp server loads e{64}/],
  ];
  for (const [bad, target, kind, reason] of cases) {
    await assert.rejects(verifiedAdapter(bad, store, target), (error: unknown) => error instanceof kind && reason.test(error.message) && (error as { retriable?: boolean }).retriable === false);
  }
  const other = await stored(3, loraArtifact(metadata(2)));
  await assert.rejects(verifiedAdapter(other.checkpoint, other.store, server(BASE)), /checkpoint v3: its artifact says it is v2/);
  const junk = await stored(4, Buffer.from('{"policyId":"llm","model":"m"}'));
  await assert.rejects(verifiedAdapter(junk.checkpoint, junk.store, server(BASE)), IncompatibleAdapterError);
});

test('options have their defaults and bad values are refused', () => {
  assert.deepEqual(resolveWeightSyncOptions({}), { policyId: 'llm', timeoutMs: 600_000 });
  assert.throws(() => resolveWeightSyncOptions({ timeoutMs: 10 }), ConfigError);
  assert.throws(() => resolveWeightSyncOptions({ policyId: ' ' }), /policyId is empty/);
});

test('a run starts its server on the base model: one serving another run\'s adapter is restarted without it, one on the base is left alone', async () => {
  const served: Array<ServedAdapter | null> = [];
  const on = (version: number): WeightServer => ({ ...server(BASE), servedVersion: async () => version, serve: async (adapter) => void served.push(adapter) });
  await serveBaseModel(on(2));
  assert.deepEqual(served, [null]);
  await serveBaseModel(on(0));
  assert.deepEqual(served, [null], 'nothing restarted');
});
