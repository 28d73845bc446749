import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { getJson, getJsonOrNull } from '../../connectors/llm/http.js';
import { ChatRequestError, probeServerKind, probeVllm, servedModelPath } from '../../connectors/llm/index.js';
import { ConnectionError, isRetriable, STACK_LLM_URL } from '../../schemas/index.js';
import { freePort, llmComponent, stackUp } from '../../stack/index.js';

/**
 * The probes and the one raw GET of connectors/llm against the stack's real llama.cpp server (its `before` brings it
 * up idempotently) and a port nothing listens on. vLLM cannot run here: its probe is checked to say no to llama.cpp.
 */
const root = STACK_LLM_URL.replace(/\/v1$/, '');
before(async () => {
  await stackUp((line) => console.log(`# ${line}`), [llmComponent({ url: STACK_LLM_URL, external: false })]);
});

test('server: auto finds llama.cpp on the stack\'s server; the vLLM probe says no to it', async () => {
  assert.equal(await probeServerKind(root, null), 'llama.cpp');
  assert.equal(await probeVllm(root, null), false);
  assert.match((await servedModelPath(root)) ?? '', /\.gguf$/);
});

test('getJson: the answer parsed; a 4xx is a ChatRequestError naming the URL, a closed port a retriable ConnectionError', async () => {
  const props = await getJson<{ chat_template?: unknown }>(`${root}/props`, { timeoutMs: 10_000 });
  assert.equal(typeof props.chat_template, 'string');
  await assert.rejects(getJson(`${root}/no-such-path`, { timeoutMs: 10_000 }), (error: unknown) => error instanceof ChatRequestError && !isRetriable(error) && error.message === `GET ${root}/no-such-path: HTTP 404`);
  const closed = `http://127.0.0.1:${await freePort()}`;
  await assert.rejects(getJson(`${closed}/props`, { timeoutMs: 10_000 }), (error: unknown) => error instanceof ConnectionError && isRetriable(error) && error.message.startsWith(`GET ${closed}/props failed`));
  assert.equal(await getJsonOrNull(`${root}/no-such-path`, { timeoutMs: 10_000 }), null);
  assert.equal(await getJsonOrNull(`${closed}/props`, { timeoutMs: 10_000 }), null);
  // A server that is not llama.cpp names no GGUF; one that does not answer is an error, not "another kind".
  assert.equal(await servedModelPath(`${root}/no-such-path`), null);
  await assert.rejects(servedModelPath(closed), ConnectionError);
});
