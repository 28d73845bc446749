import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { spawnWithCheckpointChannel } from '../../cli/llm-learner.js';
import { checkCheckpoint, LORA_SAFETENSORS_FORMAT, openCheckpointStore, readLoraArtifact, sha256Hex } from '../../connectors/checkpoints/index.js';
import { S3BlobStore } from '../../connectors/storage/index.js';
import { ArtifactIntegrityError, checkoutFile, ConfigError, isRetriable, nowIso, type PolicyCheckpoint } from '../../schemas/index.js';
import { childExit, s3Component, stackUp } from '../../stack/index.js';
import { tempDir } from './harness.js';

/**
 * LLM adapter checkpoints on S3 (issue 42: "Checkpoints (ONNX and LLM adapters)"), on the stack's real S3 server: the
 * Python learner's checkpoint calls (llm-learner/trialrun_llm_learner/store_channel.py, run by a fixture without a
 * model or Kafka, on the system python) go through its launcher's checkpoint channel and the one checkpoint store;
 * what they publish is read back by what weight sync reads with, its digest checked.
 */
before(() => stackUp((line) => console.log(`# ${line}`), [s3Component()]));

const location = (): string => `s3://trialrun/it-llm-ckpt-${randomUUID().slice(0, 8)}`;

/** A `lora-safetensors/v1` file of version `version`: u64 LE header length, JSON header with the contract's metadata, tensor bytes. */
function loraAdapter(version: number): Buffer {
  const header = Buffer.from(JSON.stringify({
    __metadata__: { format: LORA_SAFETENSORS_FORMAT, peft_config: JSON.stringify({ r: 2, lora_alpha: 4 }), base_model: 'smollm2-135m-instruct', base_sha256: 'a'.repeat(64), policy_version: String(version), parent_version: String(version - 1) },
    'base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight': { dtype: 'F32', shape: [2, 2], data_offsets: [0, 16] },
  }));
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(header.length));
  return Buffer.concat([length, header, Buffer.from(Float32Array.from([0.5, -0.25, 0.125, 1]).buffer)]);
}

/** Runs the fixture as the launcher runs the learner (`spawnWithCheckpointChannel`); its exit status and what it printed. */
async function publishThroughLauncher(checkpoints: string, adapterFile: string, version: number): Promise<{ status: number; stdout: string; stderr: string }> {
  const folder = checkoutFile('llm-learner');
  const child = await spawnWithCheckpointChannel('python3', [checkoutFile('test/fixtures/llm-learner-channel.py'), checkpoints, '3', adapterFile, String(version)], checkpoints, {
    cwd: folder,
    env: { ...process.env, PYTHONPATH: folder },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => void (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
  return { status: await childExit(child), stdout, stderr };
}

test('an LLM adapter version published by the learner through its launcher lands on S3 once and is read back with its digest checked', async () => {
  const checkpoints = location();
  const adapter = loraAdapter(1);
  const adapterFile = join(tempDir('llm-ckpt-s3'), 'adapter.safetensors');
  writeFileSync(adapterFile, adapter);
  const run = await publishThroughLauncher(checkpoints, adapterFile, 1);
  assert.equal(run.status, 0, `the fixture exits 0 (stderr: ${run.stderr})`);
  const { artifact, optimizer, readBack } = JSON.parse(run.stdout) as { artifact: NonNullable<PolicyCheckpoint['artifact']>; optimizer: NonNullable<PolicyCheckpoint['artifact']>; readBack: string };
  const sha256 = sha256Hex(adapter);
  assert.deepEqual(artifact, { uri: `${checkpoints}/llm/v1-${sha256}.bin`, sha256, bytes: adapter.length, format: LORA_SAFETENSORS_FORMAT }, 'the key is the store\'s, the record the one the learner commits');
  assert.match(optimizer.uri, new RegExp(`^${checkpoints}/llm-learner-state/v1-[0-9a-f]{64}\\.bin$`));
  assert.equal(readBack, sha256, 'the learner reads its own artifact back through the launcher (a restart restores it)');

  // The consumer side, as weight sync's verifiedAdapter reads it: the record passes its check, the bytes their sha256.
  const checkpoint: PolicyCheckpoint = {
    policyId: 'llm', version: 1, parentVersion: 0, featureNames: [], weights: [], sha256, artifact,
    metrics: { samples: 2, meanReward: 0, meanAbsAdvantage: 1, gradNorm: 0.1, staleDropped: 0, extra: {} },
    lineage: { taskId: 'all', attempt: 0, runId: 'it', policyVersion: 1, sandboxImageDigest: null, verifierVersion: null, createdAt: nowIso() },
  };
  const store = openCheckpointStore(checkpoints);
  const blobs = new S3BlobStore(checkpoints);
  try {
    const bytes = await store.get(checkCheckpoint(checkpoint)!);
    assert.deepEqual(bytes, adapter);
    assert.equal(readLoraArtifact(bytes).policyVersion, 1);
    assert.deepEqual((await store.list('llm')).map((entry) => [entry.version, entry.artifact.uri]), [[1, artifact.uri]]);

    // Publishing the same version again (a learner's retried put) creates nothing new: the store's conditional create.
    const again = await publishThroughLauncher(checkpoints, adapterFile, 1);
    assert.equal(again.status, 0, again.stderr);
    assert.deepEqual((JSON.parse(again.stdout) as { artifact: unknown }).artifact, artifact);
    assert.equal((await store.list('llm')).length, 1);

    // Bytes changed behind the store's back are never loaded, by the consumer or by a restarted learner.
    await blobs.put(`llm/v1-${sha256}.bin`, Buffer.from('not the adapter'));
    await assert.rejects(store.get(artifact), (error: unknown) => error instanceof ArtifactIntegrityError && error.message.includes(artifact.uri) && !isRetriable(error));
  } finally {
    store.close();
    blobs.close();
  }
});

test('a learner whose s3:// checkpoint bucket does not exist is not started: one ConfigError naming the bucket', async () => {
  const bucket = `trialrun-missing-${randomUUID().slice(0, 8)}`;
  await assert.rejects(
    spawnWithCheckpointChannel('python3', ['-c', ''], `s3://${bucket}/ckpt`, { stdio: 'ignore' }),
    (error: unknown) => error instanceof ConfigError && error.message.includes(`bucket "${bucket}" does not exist`),
  );
});

test('a learner that cannot be started releases the checkpoint store it was given (the file ends: nothing left open)', async () => {
  const child = await spawnWithCheckpointChannel(join(tempDir('llm-ckpt-no-python'), 'python'), [], location(), { stdio: 'ignore' });
  const failure = await new Promise<Error>((resolve) => child.once('error', resolve));
  assert.match(failure.message, /ENOENT/);
});
