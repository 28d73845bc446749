import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { ChatClient, ChatRequestError } from './client.js';

type Handler = (body: Record<string, unknown>, res: ServerResponse) => void;
let handler: Handler;
const requests: Array<Record<string, unknown>> = [];
const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  let raw = '';
  req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
  req.on('end', () => {
    const body = JSON.parse(raw) as Record<string, unknown>;
    requests.push(body);
    handler(body, res);
  });
});
let baseUrl = '';
before(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
after(() => server.close());

const reply = (res: ServerResponse, status = 200, headers: Record<string, string> = {}): void => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(
    status === 200
      ? JSON.stringify({
          model: 'tiny',
          choices: [{ message: { content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'run_tests', arguments: '{}' } }] }, finish_reason: 'tool_calls', logprobs: { content: [{ token: 'a', logprob: -0.5 }] } }],
          usage: { prompt_tokens: 12, completion_tokens: 3 },
        })
      : JSON.stringify({ error: { message: `status ${status}` } }),
  );
};

const fast = { retries: 3, initialDelayMs: 1, maxDelayMs: 5 };

test('sends tools, parses tool calls, usage and logprobs', async () => {
  handler = (_body, res) => reply(res);
  const client = new ChatClient({ baseUrl, model: 'tiny', retry: fast });
  const completion = await client.complete([{ role: 'user', content: 'hi' }], [{ name: 'run_tests', description: 'd', parameters: { type: 'object' } }]);
  assert.deepEqual(completion.toolCalls, [{ id: 'c1', name: 'run_tests', arguments: '{}' }]);
  assert.equal(completion.promptTokens, 12);
  assert.deepEqual(completion.logprobs, [-0.5]);
  const sent = requests.at(-1)!;
  assert.equal((sent.tools as unknown[]).length, 1);
  assert.equal(sent.logprobs, true);
});

test('retries 429 and 5xx, honouring Retry-After, then succeeds', async () => {
  let calls = 0;
  handler = (_body, res) => (++calls === 1 ? reply(res, 429, { 'retry-after': '0.01' }) : calls === 2 ? reply(res, 503) : reply(res));
  const completion = await new ChatClient({ baseUrl, model: 'tiny', retry: fast }).complete([{ role: 'user', content: 'x' }], []);
  assert.equal(completion.attempts, 3);
});

test('a slow server times out and is retried', async () => {
  let calls = 0;
  // The first call is never answered (until the test ends), so it times out however slow the machine is.
  const unanswered: Array<Parameters<typeof reply>[0]> = [];
  handler = (_body, res) => (++calls === 1 ? void unanswered.push(res) : reply(res));
  try {
    const completion = await new ChatClient({ baseUrl, model: 'tiny', timeoutMs: 2_000, retry: fast }).complete([{ role: 'user', content: 'x' }], []);
    assert.equal(completion.attempts, 2);
  } finally {
    for (const res of unanswered) res.destroy();
  }
});

test('a 400 is not retried and names the server error', async () => {
  let calls = 0;
  handler = (_body, res) => {
    calls++;
    reply(res, 400);
  };
  await assert.rejects(new ChatClient({ baseUrl, model: 'tiny', retry: fast }).complete([{ role: 'user', content: 'x' }], []), (error) => error instanceof ChatRequestError && /HTTP 400/.test(error.message));
  assert.equal(calls, 1);
});

test('options are checked early', () => {
  assert.throws(() => new ChatClient({ baseUrl, model: '' }), /model is required/);
  assert.throws(() => new ChatClient({ baseUrl: 'ftp://x', model: 'm' }), /baseUrl/);
  assert.throws(() => new ChatClient({ baseUrl, model: 'm', temperature: 3 }), /temperature/);
});
