import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { ConnectionError } from '../../../schemas/index.js';
import { ChatRequestError } from '../http.js';
import { LlamaCppClient } from './client.js';

/** A stand-in for llama.cpp's native endpoints, answering what each test sets. */
let answer: (path: string, body: Record<string, unknown>, res: ServerResponse) => void;
const requests: Array<{ path: string; body: Record<string, unknown> }> = [];
const server = createServer((req, res) => {
  let raw = '';
  req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
  req.on('end', () => {
    const body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
    requests.push({ path: req.url ?? '', body });
    answer(req.url ?? '', body, res);
  });
});
const send = (res: ServerResponse, body: unknown, status = 200): void => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};
let client: LlamaCppClient;
let root = '';
before(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  root = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  client = new LlamaCppClient({ rootUrl: root, retry: { retries: 2, initialDelayMs: 1, maxDelayMs: 2 } });
});
after(() => server.close());

const sampling = { temperature: 0.5, topP: 0.9, maxTokens: 8, seed: 42 };

test('a completion sends the token-array prompt, the sampling (top-k and min-p off) and the schema, and returns ids with the log of each probability they were drawn with', async () => {
  requests.length = 0;
  answer = (_path, _body, res) =>
    send(res, { model: 'm', content: '{}', tokens: [5, 0], stop_type: 'eos', completion_probabilities: [{ id: 5, prob: 0.5 }, { id: 0, prob: 0.25 }] });
  const completion = await client.complete({ promptIds: [1, 2, 3], sampling, jsonSchema: { type: 'object' } });
  assert.deepEqual([completion.completionIds, completion.logprobs, completion.finishReason, completion.content], [[5, 0], [Math.log(0.5), Math.log(0.25)], 'stop', '{}']);
  const { path, body } = requests[0]!;
  assert.equal(path, '/completion');
  assert.deepEqual(body, { prompt: [1, 2, 3], n_predict: 8, temperature: 0.5, top_p: 0.9, seed: 42, top_k: 0, min_p: 0, n_probs: 1, post_sampling_probs: true, return_tokens: true, cache_prompt: true, json_schema: { type: 'object' } });
});

test('greedy decoding (temperature 0) records the model\'s own logprobs, before sampling', async () => {
  requests.length = 0;
  answer = (_path, _body, res) => send(res, { model: 'm', content: '1', tokens: [9], stop_type: 'eos', completion_probabilities: [{ id: 9, logprob: -0.1 }] });
  const completion = await client.complete({ promptIds: [1], sampling: { ...sampling, temperature: 0 } });
  assert.deepEqual(completion.logprobs, [-0.1]);
  assert.equal((requests[0]!.body as { post_sampling_probs?: unknown }).post_sampling_probs, false);
});

test('a completion under a grammar sends it as grammar; a schema and a grammar together are refused', async () => {
  requests.length = 0;
  answer = (_path, _body, res) => send(res, { model: 'm', content: '1', tokens: [9], stop_type: 'eos', completion_probabilities: [{ id: 9, prob: 0.9 }] });
  await client.complete({ promptIds: [1], sampling, grammar: 'root ::= "1"' });
  assert.equal((requests[0]!.body as { grammar?: unknown }).grammar, 'root ::= "1"');
  assert.equal('json_schema' in (requests[0]!.body as object), false);
  await assert.rejects(client.complete({ promptIds: [1], sampling, grammar: 'root ::= "1"', jsonSchema: {} }), /a JSON Schema or a grammar, not both/);
  assert.equal(requests.length, 1);
});

test('a completion cut at its token limit finishes with length; a 503 while loading is retried', async () => {
  let calls = 0;
  answer = (_path, _body, res) =>
    ++calls === 1 ? send(res, { error: 'loading model' }, 503) : send(res, { content: 'x', tokens: [7], stop_type: 'limit', completion_probabilities: [{ id: 7, prob: 0.4 }] });
  const completion = await client.complete({ promptIds: [1], sampling });
  assert.equal(completion.finishReason, 'length');
  assert.equal(completion.attempts, 2);
});

test('logprobs that do not match the sampled tokens are drawn again with the next seed, then refused, never recorded', async () => {
  requests.length = 0;
  answer = (_path, body, res) =>
    (body as { seed: number }).seed === 44
      ? send(res, { content: 'xy', tokens: [7, 8], stop_type: 'eos', completion_probabilities: [{ id: 7, prob: 0.4 }, { id: 8, prob: 0.5 }] })
      : send(res, { content: 'x', tokens: [7, 8], stop_type: 'eos', completion_probabilities: [{ id: 7, prob: 0.4 }] });
  const completion = await client.complete({ promptIds: [1], sampling });
  assert.deepEqual([completion.seed, completion.completionIds, requests.map((r) => (r.body as { seed: number }).seed)], [44, [7, 8], [42, 43, 44]]);
  requests.length = 0;
  await assert.rejects(client.complete({ promptIds: [1], sampling: { ...sampling, seed: 1 } }), (error: unknown) => error instanceof ChatRequestError && /2 tokens but 1 logprobs/.test(error.message));
  assert.equal(requests.length, 3);
});

test('tokenize parses special tokens; the identity hashes the chat template; a server without one is named', async () => {
  answer = (path, _body, res) =>
    path === '/tokenize' ? send(res, { tokens: [1, 2] }) : send(res, { chat_template: '{{ messages }}', model_alias: 'tiny', model_path: '/m.gguf', total_slots: 2, default_generation_settings: { n_ctx: 4096 } });
  requests.length = 0;
  assert.deepEqual(await client.tokenize('<|im_start|>x', false), [1, 2]);
  assert.deepEqual(requests[0]!.body, { content: '<|im_start|>x', add_special: false, parse_special: true });
  const identity = await client.identity();
  assert.equal(identity.model, 'tiny');
  assert.match(identity.chatTemplateSha256, /^[0-9a-f]{64}$/);
  assert.deepEqual([identity.slots, identity.contextTokens], [2, 4096]);
  assert.equal(await LlamaCppClient.probe(root, null), true);
  answer = (_path, _body, res) => send(res, { data: [] });
  assert.equal(await LlamaCppClient.probe(root, null), false);
  await assert.rejects(client.identity(), /names no chat_template/);
});

test('the identity is retried through a 503 (a server weight sync restarted, still loading)', async () => {
  let calls = 0;
  answer = (_path, _body, res) => (++calls === 1 ? send(res, { error: 'loading model' }, 503) : send(res, { chat_template: '{{ messages }}', model_alias: 'tiny@v1', total_slots: 1, default_generation_settings: { n_ctx: 2048 } }));
  assert.equal((await client.identity()).model, 'tiny@v1');
  assert.equal(calls, 2);
});

test('the probe waits out a restarting server (refused, then 503) and tells another kind only from its answer', async () => {
  const retry = { retries: 3, initialDelayMs: 1, maxDelayMs: 2 };
  let calls = 0;
  answer = (_path, _body, res) => (++calls < 3 ? send(res, { error: 'loading model' }, 503) : send(res, { chat_template: '{{ messages }}', default_generation_settings: { n_ctx: 2048 } }));
  assert.equal(await LlamaCppClient.probe(root, null, { retry }), true);
  assert.equal(calls, 3);
  answer = (_path, _body, res) => send(res, { error: 'not found' }, 404);
  assert.equal(await LlamaCppClient.probe(root, null, { retry }), false);
  answer = (_path, _body, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<html>');
  };
  assert.equal(await LlamaCppClient.probe(root, null, { retry }), false);
  // Nothing listening: not another kind of server, an error the caller retries.
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  await assert.rejects(LlamaCppClient.probe(`http://127.0.0.1:${port}`, null, { retry }), (error: unknown) => error instanceof ConnectionError && /props failed/.test(error.message));
});

const streamEvents = (res: ServerResponse, events: readonly unknown[]): void => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  // Split mid-event too: the reader must join what the network cuts.
  const text = events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('');
  res.write(text.slice(0, 7));
  res.end(text.slice(7));
};

test('a streamed completion hands out each token\'s text as it comes and returns the ids and their logprobs whole; a 503 before it starts is retried', async () => {
  requests.length = 0;
  let calls = 0;
  answer = (_path, _body, res) =>
    ++calls === 1
      ? send(res, { error: 'loading model' }, 503)
      : streamEvents(res, [
          { content: 'a', tokens: [5], stop: false, completion_probabilities: [{ id: 5, prob: 0.5 }] },
          { content: 'b', tokens: [6], stop: false, completion_probabilities: [{ id: 6, prob: 0.25 }] },
          { content: '', tokens: [0], stop: false, completion_probabilities: [{ id: 0, prob: 1 }] },
          { content: '', tokens: [], stop: true, model: 'm@v2', stop_type: 'eos' },
        ]);
  const pieces: string[] = [];
  const completion = await client.completeStreaming({ promptIds: [1, 2], sampling }, (text) => pieces.push(text));
  assert.deepEqual(pieces, ['a', 'b']);
  assert.deepEqual([completion.content, completion.completionIds, completion.logprobs, completion.finishReason, completion.model, completion.attempts], ['ab', [5, 6, 0], [Math.log(0.5), Math.log(0.25), 0], 'stop', 'm@v2', 2]);
  assert.equal((requests.at(-1)!.body as { stream?: unknown }).stream, true);
});

test('a streamed completion whose probabilities do not match its tokens, or that ends without its last event, is refused (never drawn again: its text is out)', async () => {
  requests.length = 0;
  answer = (_path, _body, res) => streamEvents(res, [{ content: 'a', tokens: [5], stop: false, completion_probabilities: [] }]);
  await assert.rejects(client.completeStreaming({ promptIds: [1], sampling }, () => {}), (error: unknown) => error instanceof ChatRequestError && /1 tokens with 0 probabilities/.test(error.message));
  assert.equal(requests.length, 1);
  answer = (_path, _body, res) => streamEvents(res, [{ content: 'a', tokens: [5], stop: false, completion_probabilities: [{ id: 5, prob: 0.5 }] }]);
  await assert.rejects(client.completeStreaming({ promptIds: [1], sampling }, () => {}), (error: unknown) => error instanceof ConnectionError && /before its last event/.test(error.message));
});
