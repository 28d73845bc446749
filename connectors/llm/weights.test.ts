import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, test } from 'node:test';
import type { LoraArtifactInfo } from '../checkpoints/index.js';
import { ChatRequestError } from './http.js';
import { SglangWeightServer } from './sglang/index.js';
import { VllmWeightServer } from './vllm/index.js';
import { servedModelName, servedVersionOf, type ServedAdapter } from './weight-server.js';

/** A stand-in server that records every request and answers as vLLM or SGLang do (their documented APIs). */
const requests: Array<{ method: string; url: string; body: Record<string, unknown> | null }> = [];
let loaded: string[] = [];
let sglang = { version: '0', success: true };
const server = createServer((req, res) => {
  let raw = '';
  req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
  req.on('end', () => {
    const body = raw ? (JSON.parse(raw) as Record<string, unknown>) : null;
    requests.push({ method: req.method!, url: req.url!, body });
    if (req.url === '/v1/models') return send(res, { object: 'list', data: [{ id: 'base-model' }, ...loaded.map((id) => ({ id, parent: 'base-model' }))] });
    if (req.url === '/v1/load_lora_adapter') {
      loaded.push(String(body!.lora_name));
      return send(res, `Success: LoRA adapter '${String(body!.lora_name)}' added successfully.`, 200, 'text/plain');
    }
    if (req.url === '/v1/unload_lora_adapter') {
      loaded = loaded.filter((name) => name !== body!.lora_name);
      return send(res, `Success: LoRA adapter '${String(body!.lora_name)}' removed successfully.`, 200, 'text/plain');
    }
    if (req.url === '/update_weights_from_disk') {
      if (sglang.success) sglang.version = String(body!.weight_version);
      return send(res, { success: sglang.success, message: sglang.success ? 'Succeeded to update model weights.' : 'Failed to load weights: shape mismatch' });
    }
    if (req.url === '/model_info') return send(res, { model_path: '/models/base', weight_version: sglang.version });
    send(res, { error: 'not found' }, 404);
  });
});
const send = (res: ServerResponse, body: unknown, status = 200, type = 'application/json'): void => {
  res.writeHead(status, { 'content-type': type });
  res.end(type === 'application/json' ? JSON.stringify(body) : String(body));
};
let rootUrl = '';
before(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  rootUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());
beforeEach(() => {
  requests.length = 0;
  loaded = [];
  sglang = { version: '0', success: true };
});

const info: LoraArtifactInfo = { peftConfig: { r: 8, lora_alpha: 16, target_modules: ['q_proj'] }, baseModel: 'base-model', baseSha256: 'a'.repeat(64), policyVersion: 2, parentVersion: 1, tensors: ['t'] };
const adapter = (version: number): ServedAdapter => ({ version, bytes: Buffer.from(`adapter v${version}`), info: { ...info, policyVersion: version } });
const signal = new AbortController().signal;

test('served model names carry the version; any other name is the base model', () => {
  assert.equal(servedModelName('m', 0), 'm');
  assert.equal(servedModelName('Qwen/Qwen3-8B', 12), 'Qwen/Qwen3-8B@v12');
  assert.deepEqual(['m@v12', 'm', 'm@vx', 'm@v3-old'].map(servedVersionOf), [12, 0, 0, 0]);
});

test('vLLM: the new version is loaded as a peft folder under its name, then the other versions are unloaded', async () => {
  const workDir = mkdtempSync(join(tmpdir(), 'trialrun-vllm-'));
  const vllm = new VllmWeightServer({ rootUrl, model: 'base-model', workDir, baseSha256: 'a'.repeat(64) });
  await vllm.serve(adapter(1), signal);
  await vllm.serve(adapter(2), signal);
  assert.deepEqual(loaded, ['base-model@v2']);
  assert.equal(await vllm.servedVersion(), 2);
  const calls = requests.filter((r) => r.method === 'POST').map((r) => [r.url, r.body]);
  assert.deepEqual(calls, [
    ['/v1/load_lora_adapter', { lora_name: 'base-model@v1', lora_path: join(workDir, 'v1') }],
    ['/v1/load_lora_adapter', { lora_name: 'base-model@v2', lora_path: join(workDir, 'v2') }],
    ['/v1/unload_lora_adapter', { lora_name: 'base-model@v1' }],
  ]);
  // The folder is what peft's save_pretrained writes: the config and the adapter's bytes.
  assert.deepEqual(JSON.parse(await readFile(join(workDir, 'v2', 'adapter_config.json'), 'utf8')), { peft_type: 'LORA', task_type: 'CAUSAL_LM', r: 8, lora_alpha: 16, target_modules: ['q_proj'], base_model_name_or_path: 'base-model' });
  assert.equal(await readFile(join(workDir, 'v2', 'adapter_model.safetensors'), 'utf8'), 'adapter v2');
  assert.equal(await vllm.baseSha256(), 'a'.repeat(64));

  // A rollback to the base model unloads every version.
  await vllm.serve(null, signal);
  assert.deepEqual(loaded, []);
  assert.equal(await vllm.servedVersion(), 0);
});

test('SGLang: the merged weights are loaded in place with the version as weight_version, which /model_info reports', async () => {
  const merged: Array<[string, string]> = [];
  const workDir = mkdtempSync(join(tmpdir(), 'trialrun-sglang-'));
  const sglangServer = new SglangWeightServer({
    rootUrl,
    model: 'base-model',
    workDir,
    basePath: '/models/base',
    merge: async (adapterDir, outDir) => {
      merged.push([await readFile(join(adapterDir, 'adapter_model.safetensors'), 'utf8'), outDir]);
    },
  });
  await sglangServer.serve(adapter(3), signal);
  assert.equal(await sglangServer.servedVersion(), 3);
  await sglangServer.serve(null, signal);
  assert.equal(await sglangServer.servedVersion(), 0);
  const calls = requests.filter((r) => r.method === 'POST').map((r) => r.body);
  assert.deepEqual(calls, [
    { model_path: join(workDir, 'merged-v3'), weight_version: '3', abort_all_requests: false },
    { model_path: '/models/base', weight_version: '0', abort_all_requests: false },
  ]);
  assert.deepEqual(merged, [['adapter v3', join(workDir, 'merged-v3')]], 'the adapter went to the merge as a peft folder');
  assert.equal(await sglangServer.baseSha256(), null, 'not checked unless configured');

  sglang.success = false;
  await assert.rejects(sglangServer.serve(adapter(4), signal), (error: unknown) => error instanceof ChatRequestError && /SGLang refused the weights .*shape mismatch/.test(error.message));
  assert.equal(await sglangServer.servedVersion(), 0, 'a refused update leaves the served version');
});

test('a server that does not answer reports no served version; bad options are refused early', async () => {
  const gone = new VllmWeightServer({ rootUrl: 'http://127.0.0.1:9', model: 'm', workDir: tmpdir() });
  assert.equal(await gone.servedVersion(), null);
  assert.throws(() => new VllmWeightServer({ rootUrl: 'ftp://x', model: 'm', workDir: tmpdir() }), /not an http\(s\) URL/);
  assert.throws(() => new VllmWeightServer({ rootUrl, model: ' ', workDir: tmpdir() }), /model is empty/);
});
