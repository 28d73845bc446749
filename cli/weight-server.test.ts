import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, STACK_LLM_URL } from '../schemas/index.js';
import { loopWeightServer, resolveWeightServerOptions, weightServerChoice } from './weight-server.js';
import { resolveLlmPolicyOptions } from '../policies/index.js';

test('the weight server defaults to the stack\'s llama.cpp server, and bad combinations are refused early', () => {
  const resolved = resolveWeightServerOptions({}, { TRIALRUN_STATE_DIR: '/tmp/state' });
  assert.deepEqual(resolved, { kind: 'llama.cpp', url: STACK_LLM_URL, model: 'smollm2-135m-instruct', workDir: '/tmp/state/weight-sync', baseSha256: null, basePath: null });
  assert.throws(() => resolveWeightServerOptions({ kind: 'tgi' as never }), /kind must be one of llama\.cpp, vllm, sglang/);
  assert.throws(() => resolveWeightServerOptions({ url: 'gpu-box:8000' }), /not an http\(s\) URL/);
  assert.throws(() => resolveWeightServerOptions({ kind: 'sglang' }), /basePath .* is required for sglang/);
  assert.throws(() => resolveWeightServerOptions({ kind: 'vllm', basePath: '/m' }), /basePath goes with sglang only/);
  assert.throws(() => resolveWeightServerOptions({ baseSha256: 'a'.repeat(64) }), /llama\.cpp hashes the GGUF it loads/);
  assert.throws(() => resolveWeightServerOptions({ kind: 'vllm', baseSha256: 'xyz' }), /64 lowercase hex digits/);
  assert.equal(resolveWeightServerOptions({ kind: 'vllm', url: 'http://gpu:8000/v1/', baseSha256: 'a'.repeat(64) }, {}).url, 'http://gpu:8000/v1');
});

test('the flags go with run weight-sync only', () => {
  assert.equal(weightServerChoice({}, false), null);
  assert.throws(() => weightServerChoice({ 'server-kind': 'vllm' }, false), (error: unknown) => error instanceof ConfigError && /--server-kind goes with run weight-sync only/.test(error.message));
  assert.equal(weightServerChoice({ 'server-kind': 'vllm', 'server-url': 'http://gpu:8000/v1' }, true)!.kind, 'vllm');
  assert.throws(() => weightServerChoice({ 'base-path': '' }, true), /--base-path needs a value/);
});

test('a loop syncs weights only to the stack\'s own llama.cpp server', () => {
  assert.equal(loopWeightServer(undefined), undefined);
  assert.equal(loopWeightServer(resolveLlmPolicyOptions({ baseUrl: 'http://gpu:8000/v1' }, {})), undefined);
  assert.equal(loopWeightServer(resolveLlmPolicyOptions({ server: 'vllm' }, {})), undefined);
  assert.equal(loopWeightServer(resolveLlmPolicyOptions({}, {}))!.kind, 'llama.cpp');
});
