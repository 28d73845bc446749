import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { ConfigError, llmTrainingSamples, type LlmCall } from '../../../schemas/index.js';
import { LlmGateway, resolveEpisodeBudget, resolveLlmGatewayOptions, type GatewayRoute } from './gateway.js';

/**
 * A stand-in for llama.cpp's native endpoints with a tokenizer one can read: `<S>` is 1, `<E>` (the end of a turn and
 * of generation) is 2, any other character its code + 10. The template writes `<S>role\ncontent<E>\n` per message and
 * `<S>assistant\n` to prompt a reply; each completion is the next of `replies` followed by `<E>`.
 */
const SPECIAL: Record<string, number> = { '<S>': 1, '<E>': 2 };
const tokenize = (text: string): number[] => {
  const ids: number[] = [];
  for (let i = 0; i < text.length; ) {
    const special = Object.keys(SPECIAL).find((s) => text.startsWith(s, i));
    if (special) {
      ids.push(SPECIAL[special]!);
      i += special.length;
    } else ids.push(text.codePointAt(i++)! + 10);
  }
  return ids;
};
const detokenize = (ids: readonly number[]): string => ids.map((id) => Object.keys(SPECIAL).find((s) => SPECIAL[s] === id) ?? String.fromCodePoint(id - 10)).join('');
const render = (messages: Array<{ role: string; content: string }>): string => `${messages.map((m) => `<S>${m.role}\n${m.content}<E>\n`).join('')}<S>assistant\n`;

let replies: string[] = [];
let templateTools = false;
const templateRequests: Array<Record<string, unknown>> = [];
let completionDelayMs = 0;
const completions: Array<Record<string, unknown>> = [];
const upstream = createServer((req, res) => {
  let raw = '';
  req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
  req.on('end', () => {
    const body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
    const send = (value: unknown): void => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    if (req.url === '/props') return send({ chat_template: 't', model_alias: 'stand-in@v3', model_path: '/m.gguf', model_ftype: 'Q4', total_slots: 1, default_generation_settings: { n_ctx: 4096 }, chat_template_caps: { supports_tools: templateTools }, eos_token: '<E>' });
    if (req.url === '/apply-template') {
      templateRequests.push(body);
      // A template with tools of its own writes them as a line of their names before the conversation.
      const tools = (body.tools as Array<{ function: { name: string } }> | undefined) ?? [];
      return send({ prompt: `${tools.length > 0 ? `<S>tools ${tools.map((t) => t.function.name).join(',')}<E>\n` : ''}${render(body.messages as Array<{ role: string; content: string }>)}` });
    }
    if (req.url === '/tokenize') return send({ tokens: tokenize(body.content as string) });
    if (req.url === '/detokenize') return send({ content: detokenize(body.tokens as number[]) });
    if (req.url === '/completion') {
      completions.push(body);
      const text = replies.shift() ?? 'ok';
      const ids = [...tokenize(text), 2];
      const n = body.n_predict as number;
      const cut = ids.length > n;
      const tokens = ids.slice(0, n);
      const last = { model: 'stand-in@v3', stop_type: cut ? 'limit' : 'eos' };
      const answer = (): void => {
        if (!body.stream) return send({ ...last, content: detokenize(cut ? tokens : tokens.slice(0, -1)), tokens, completion_probabilities: tokens.map((id) => ({ id, prob: 0.5 })) });
        // As llama.cpp streams: one event per sampled token (the end-of-generation token's text empty), then the last.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const id of tokens) res.write(`data: ${JSON.stringify({ content: id === 2 ? '' : detokenize([id]), tokens: [id], stop: false, completion_probabilities: [{ id, prob: 0.5 }] })}\n\n`);
        res.end(`data: ${JSON.stringify({ ...last, content: '', tokens: [], stop: true })}\n\n`);
      };
      if (completionDelayMs > 0) setTimeout(answer, completionDelayMs);
      else answer();
      return;
    }
    res.writeHead(404).end();
  });
});

let gateway: LlmGateway;
before(async () => {
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  gateway = await LlmGateway.start({ baseUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`, retry: { retries: 0 } });
});
after(async () => {
  await gateway.stop();
  upstream.close();
});

interface Answer {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

async function call(route: Pick<GatewayRoute, 'baseUrl' | 'apiKey'>, body: unknown, options: { path?: string; key?: string | null; raw?: string; method?: string } = {}): Promise<Answer> {
  const key = options.key === undefined ? route.apiKey : options.key;
  const response = await fetch(`${route.baseUrl}${options.path ?? '/chat/completions'}`, {
    method: options.method ?? 'POST',
    headers: { 'content-type': 'application/json', ...(key === null ? {} : { authorization: `Bearer ${key}` }) },
    ...(options.method === 'GET' ? {} : { body: options.raw ?? JSON.stringify(body) }),
  });
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  return { status: response.status, headers: response.headers, body: parsed, text };
}

const user = (content: string) => ({ role: 'user', content });
const assistant = (content: string) => ({ role: 'assistant', content });

test('options and budgets resolve once with their defaults, and bad values are ConfigErrors naming the option', () => {
  const options = resolveLlmGatewayOptions({}, { LLM_BASE_URL: 'http://h:1/v1/' });
  assert.equal(options.baseUrl, 'http://h:1/v1');
  assert.equal(options.defaultMaxTokens, 256);
  assert.throws(() => resolveLlmGatewayOptions({ baseUrl: 'ftp://x' }, {}), (e: unknown) => e instanceof ConfigError && /baseUrl/.test(e.message));
  assert.throws(() => resolveLlmGatewayOptions({ port: 70_000 }, {}), /LlmGatewayOptions.port/);
  assert.deepEqual(resolveEpisodeBudget({}), { maxCalls: 32, maxTokens: 16_384, maxWallMs: 600_000 });
  assert.throws(() => resolveEpisodeBudget({ maxCalls: 0 }), /EpisodeBudget.maxCalls/);
});

test('a gateway in front of a server without a token-in/token-out API refuses to start', async () => {
  const plain = createServer((_req, res) => void res.writeHead(404).end());
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
  try {
    await assert.rejects(LlmGateway.start({ baseUrl: `http://127.0.0.1:${(plain.address() as AddressInfo).port}/v1` }), (e: unknown) => e instanceof ConfigError && /token-in\/token-out/.test(e.message));
  } finally {
    plain.close();
  }
});

test('each episode has its own route and key: a missing, wrong or other episode\'s key, an unknown route and an ended episode get OpenAI errors and never another episode\'s data', async () => {
  const a = gateway.open();
  const b = gateway.open();
  assert.notEqual(a.baseUrl, b.baseUrl);
  const models = await call(a, null, { path: '/models', method: 'GET' });
  assert.equal(models.status, 200, models.text);
  assert.equal(models.body.data[0].id, 'stand-in@v3');
  replies = ['secret of a'];
  const answered = await call(a, { messages: [user('hi')] });
  assert.equal(answered.status, 200, answered.text);
  assert.equal(answered.body.choices[0].message.content, 'secret of a');

  const refusals = [
    [await call(a, { messages: [user('x')] }, { key: null }), 401, 'missing_api_key'],
    [await call(a, { messages: [user('x')] }, { key: 'tr-guess' }), 401, 'invalid_api_key'],
    [await call(a, { messages: [user('x')] }, { key: b.apiKey }), 401, 'invalid_api_key'],
    [await call({ baseUrl: a.baseUrl.replace(/\/e\/[^/]+\//, '/e/nosuch/'), apiKey: a.apiKey }, { messages: [user('x')] }), 401, 'invalid_api_key'],
    [await call({ baseUrl: a.baseUrl.replace(/\/v1$/, '/v2'), apiKey: a.apiKey }, { messages: [user('x')] }), 404, 'not_found'],
  ] as const;
  for (const [answer, status, code] of refusals) {
    assert.equal(answer.status, status, answer.text);
    assert.equal(answer.body.error.code, code);
    assert.equal(typeof answer.body.error.message, 'string');
    assert.ok(!answer.text.includes('secret'), 'no other episode\'s data');
  }
  const recordsA = await a.close();
  assert.equal(recordsA.length, 1);
  assert.equal(recordsA[0]!.content, 'secret of a');
  const ended = await call(a, { messages: [user('again')] });
  assert.equal(ended.status, 410);
  assert.equal(ended.body.error.code, 'episode_ended');
  assert.deepEqual(await b.close(), [], 'b made no call: its records are empty, never a\'s');
  assert.deepEqual(await a.close(), recordsA, 'closing twice gives the same records');
});

test('a harness that re-sends history as it received it extends one token-exact sequence; the end-of-turn token is not doubled', async () => {
  const route = gateway.open();
  replies = ['first', 'second'];
  const one = await call(route, { messages: [user('q1')], temperature: 0.7, top_p: 0.9, seed: 5, max_tokens: 20 });
  const two = await call(route, { messages: [user('q1'), assistant(one.body.choices[0].message.content), user('q2')], temperature: 0.7 });
  assert.equal(two.body.choices[0].message.content, 'second');
  const calls = await route.close();
  assert.equal(calls.length, 2);
  const [first, second] = calls as [LlmCall, LlmCall];
  assert.deepEqual(first.tokens!.appendedPromptIds, tokenize(render([user('q1')])));
  assert.equal(first.tokens!.extendsPrevious, false);
  assert.equal(first.tokens!.drift, undefined);
  assert.deepEqual(first.tokens!.completionIds, [...tokenize('first'), 2]);
  assert.deepEqual(first.logprobs, first.tokens!.completionIds.map(() => Math.log(0.5)));
  assert.deepEqual(first.sampling, { temperature: 0.7, topP: 0.9, maxTokens: 20, seed: 5 });
  assert.equal(first.policyVersion, 3, 'the version the server named');
  assert.equal(first.finishReason, 'stop');
  assert.equal(second.tokens!.extendsPrevious, true);
  assert.equal(second.tokens!.drift, undefined);
  assert.equal(detokenize(second.tokens!.appendedPromptIds), '\n<S>user\nq2<E>\n<S>assistant\n', 'only what follows the sampled <E> is appended');
  const [sample, ...rest] = llmTrainingSamples(calls.map((llm, index) => ({ index, llm })));
  assert.equal(rest.length, 0, 'one sample');
  // The whole sequence is the template's rendering of the conversation, each reply as sampled.
  assert.equal(detokenize([...sample!.promptIds, ...sample!.completionIds]), `${render([user('q1'), assistant('first'), user('q2')])}second<E>`);
  assert.equal(completions.at(-1)!.n_predict, 256, 'the default max tokens');
});

test('history re-sent with a rewritten reply is drift: the record says where it parted, and the prefix rule starts a new sample', async () => {
  const route = gateway.open();
  replies = ['alpha', 'beta', 'gamma'];
  await call(route, { messages: [user('q1')] });
  await call(route, { messages: [user('q1'), assistant('alpha'), user('q2')] });
  // The harness trims the first reply (as some strip reasoning): the tokens it re-sends are not what was sampled.
  await call(route, { messages: [user('q1'), assistant('alp'), user('q2'), assistant('beta'), user('q3')] });
  const calls = await route.close();
  const third = calls[2]!.tokens!;
  assert.equal(third.extendsPrevious, false);
  const previous = calls[1]!.tokens!.promptLength + calls[1]!.tokens!.completionIds.length;
  const parted = tokenize(render([user('q1')])).length + 'alp'.length;
  assert.deepEqual(third.drift, { previousTokens: previous, matchingTokens: parted });
  assert.equal(third.appendedPromptIds.length, third.promptLength, 'a drifted prompt is recorded whole');
  const samples = llmTrainingSamples(calls.map((llm, index) => ({ index, llm })));
  assert.deepEqual(samples.map((s) => s.stepIndices), [[0, 1], [2]]);
});

test('budgets: calls, tokens and wall time per episode are enforced with 429s that tell clients not to retry', async () => {
  const calls = gateway.open({ maxCalls: 1 });
  replies = ['one'];
  assert.equal((await call(calls, { messages: [user('a')] })).status, 200);
  const over = await call(calls, { messages: [user('a'), assistant('one'), user('b')] });
  assert.equal(over.status, 429);
  assert.equal(over.headers.get('x-should-retry'), 'false');
  assert.equal(over.body.error.code, 'episode_budget_exhausted');
  assert.match(over.body.error.message, /calls \(1\)/);
  assert.equal((await calls.close()).length, 1);

  const prompt = tokenize(render([user('a')])).length;
  const tokens = gateway.open({ maxTokens: prompt + 3 });
  replies = ['abcdef'];
  const cut = await call(tokens, { messages: [user('a')], max_tokens: 50 });
  assert.equal(cut.body.choices[0].finish_reason, 'length', 'max tokens clamped to what the budget leaves');
  assert.equal(cut.body.usage.completion_tokens, 3);
  const none = await call(tokens, { messages: [user('a'), assistant('abc'), user('b')] });
  assert.equal(none.status, 429);
  assert.match(none.body.error.message, /tokens/);
  await tokens.close();

  const wall = gateway.open({ maxWallMs: 150 });
  completionDelayMs = 1_000;
  try {
    const late = await call(wall, { messages: [user('a')] });
    assert.equal(late.status, 429);
    assert.match(late.body.error.message, /wall time/);
  } finally {
    completionDelayMs = 0;
  }
  assert.deepEqual(await wall.close(), [], 'a call cut off records nothing');
});

test('a call in flight when its episode closes is answered 410, and close waits for it', async () => {
  const route = gateway.open();
  completionDelayMs = 500;
  try {
    const pending = call(route, { messages: [user('a')] });
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(await route.close(), []);
    const answer = await pending;
    assert.equal(answer.status, 410);
    assert.equal(answer.body.error.code, 'episode_ended');
  } finally {
    completionDelayMs = 0;
  }
});

test('bad JSON and bad fields are 400s naming the field', async () => {
  const route = gateway.open();
  const cases: Array<[unknown, string | null, RegExp]> = [
    [{}, 'messages', /messages/],
    [{ messages: [] }, 'messages', /messages/],
    [{ messages: [{ role: 'wizard', content: 'x' }] }, 'messages[0].role', /messages\[0\]\.role/],
    [{ messages: [user('x')], temperature: 'hot' }, 'temperature', /temperature/],
    [{ messages: [user('x')], n: 2 }, 'n', /one choice/],
    [{ messages: [user('x')], stop: ['\n'] }, 'stop', /stop words are not supported/],
    [{ messages: [user('x')], presence_penalty: 0.5 }, 'presence_penalty', /penalties/],
    [{ messages: [user('x')], tool_choice: { type: 'function', function: { name: 'f' } } }, 'tool_choice', /tool_choice/],
    [{ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }, 'messages[0].content[0]', /only text parts/],
  ];
  for (const [body, param, message] of cases) {
    const answer = await call(route, body);
    assert.equal(answer.status, 400, JSON.stringify(body));
    assert.equal(answer.body.error.param, param, JSON.stringify(body));
    assert.match(answer.body.error.message, message);
  }
  const broken = await call(route, null, { raw: '{"messages": [' });
  assert.equal(broken.status, 400);
  assert.equal(broken.body.error.code, 'invalid_json');
  assert.deepEqual(await route.close(), [], 'refused calls record nothing and spend nothing');
});

test('streaming answers in OpenAI\'s chunk format: a role chunk, the content, the finish reason, usage where asked, then [DONE]', async () => {
  const route = gateway.open();
  replies = ['streamed reply'];
  const answer = await call(route, { messages: [user('s')], stream: true, stream_options: { include_usage: true } });
  assert.equal(answer.status, 200);
  assert.match(answer.headers.get('content-type')!, /text\/event-stream/);
  assert.ok(answer.text.endsWith('data: [DONE]\n\n'));
  const events = answer.text.split('\n\n').filter((e) => e !== '');
  assert.ok(events.every((e) => e.startsWith('data: ')), 'every event is one data line');
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice('data: '.length)));
  assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0].id));
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  assert.equal(chunks.flatMap((c) => c.choices.map((ch: any) => ch.delta.content ?? '')).join(''), 'streamed reply');
  assert.equal(chunks.filter((c) => c.choices[0]?.delta.content).length, 'streamed reply'.length, 'token by token: one chunk per sampled token');
  assert.equal(completions.at(-1)!.stream, true, 'the server was asked to stream');
  assert.equal(chunks.at(-2).choices[0].finish_reason, 'stop');
  assert.deepEqual(chunks.at(-1).choices, []);
  assert.equal(chunks.at(-1).usage.completion_tokens, 'streamed reply'.length + 1);
  const [record] = await route.close();
  assert.equal(detokenize(record!.tokens!.completionIds), 'streamed reply<E>');
});

test('tools: listed in the system prompt where the template has none; a reply that is a call comes back as tool_calls, text stays text, and the call re-sent extends the sequence', async () => {
  const route = gateway.open();
  const tools = [{ type: 'function', function: { name: 'bash', description: 'run a command', parameters: { type: 'object', properties: { command: { type: 'string' } } } } }];
  replies = ['{"name": "bash", "arguments": {"command": "ls"}}', 'just text'];
  const first = await call(route, { messages: [{ role: 'system', content: 'be brief' }, user('list files')], tools });
  const message = first.body.choices[0].message;
  assert.equal(first.body.choices[0].finish_reason, 'tool_calls');
  assert.equal(message.content, null);
  assert.equal(message.tool_calls[0].function.name, 'bash');
  assert.deepEqual(JSON.parse(message.tool_calls[0].function.arguments), { command: 'ls' });
  const second = await call(route, {
    messages: [{ role: 'system', content: 'be brief' }, user('list files'), { role: 'assistant', content: null, tool_calls: message.tool_calls }, { role: 'tool', tool_call_id: message.tool_calls[0].id, content: 'a.txt' }],
    tools,
  });
  assert.equal(second.body.choices[0].message.content, 'just text');
  assert.equal(second.body.choices[0].finish_reason, 'stop');
  const calls = await route.close();
  assert.match(detokenize(calls[0]!.tokens!.appendedPromptIds), /^<S>system\nbe brief\n\nYou may call one of these tools[\s\S]*"name":"bash"/);
  assert.equal(calls[1]!.tokens!.extendsPrevious, true, 'the tool call was rendered back as the text that was sampled');
});

test('a template with tools of its own gets the request\'s tools and the harness\'s tool-call messages as given', async () => {
  templateTools = true;
  const withTools = await LlmGateway.start({ baseUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`, retry: { retries: 0 } });
  try {
    const route = withTools.open();
    const tools = [{ type: 'function', function: { name: 'bash', parameters: { type: 'object' } } }];
    replies = ['plain'];
    templateRequests.length = 0;
    const foreignCall = { role: 'assistant', content: '', tool_calls: [{ id: 'call_elsewhere', type: 'function', function: { name: 'bash', arguments: '{"command":"pwd"}' } }] };
    const answer = await call(route, { messages: [user('go'), foreignCall, { role: 'tool', tool_call_id: 'call_elsewhere', content: '/w' }], tools });
    assert.equal(answer.status, 200, answer.text);
    const sent = templateRequests[0]! as { tools: unknown[]; messages: Array<Record<string, unknown>> };
    assert.deepEqual(sent.tools, tools, 'the tools go to the template');
    assert.equal(sent.messages[0]!.role, 'user', 'no tool list is added to a system prompt');
    assert.deepEqual(sent.messages[1]!.tool_calls, foreignCall.tool_calls, 'a call the gateway did not sample is the template\'s to render');
    assert.equal(sent.messages[2]!.tool_call_id, 'call_elsewhere');
    const [record] = await route.close();
    assert.match(detokenize(record!.tokens!.appendedPromptIds), /^<S>tools bash<E>\n/);
  } finally {
    templateTools = false;
    await withTools.stop();
  }
});

test('a client that hangs up during a streamed call leaves the gateway serving, and the sampled call is recorded', async () => {
  const route = gateway.open();
  completionDelayMs = 300;
  replies = ['unheard'];
  try {
    const aborted = new AbortController();
    const response = await fetch(`${route.baseUrl}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${route.apiKey}` }, body: JSON.stringify({ messages: [user('a')], stream: true }), signal: aborted.signal });
    assert.equal(response.status, 200);
    aborted.abort();
    await new Promise((resolve) => setTimeout(resolve, 500));
  } finally {
    completionDelayMs = 0;
  }
  replies = ['heard'];
  const next = await call(route, { messages: [user('a')] });
  assert.equal(next.body.choices[0].message.content, 'heard');
  const calls = await route.close();
  assert.deepEqual(calls.map((c) => c.content), ['unheard', 'heard']);
  assert.equal(calls[1]!.tokens!.drift?.matchingTokens, calls[0]!.tokens!.promptLength, 'the retry is drift: it parts where the unheard reply began');
});

test('a streamed reply is held while it may be a tool call: a call comes as one tool_calls chunk, text that opens like one but is not comes whole', async () => {
  const route = gateway.open();
  const tools = [{ type: 'function', function: { name: 'bash', parameters: { type: 'object' } } }];
  const deltas = async (reply: string) => {
    replies = [reply];
    const answer = await call(route, { messages: [user('s')], tools, stream: true });
    const chunks = answer.text.split('\n\n').filter((e) => e.startsWith('data: {')).map((e) => JSON.parse(e.slice('data: '.length)));
    return { contents: chunks.map((c) => c.choices[0]?.delta.content).filter((c) => c), calls: chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []), finish: chunks.at(-1).choices[0].finish_reason };
  };
  const asCall = await deltas('{"name": "bash", "arguments": {"command": "ls"}}');
  assert.deepEqual([asCall.contents, asCall.calls.length, asCall.calls[0].function.name, asCall.finish], [[], 1, 'bash', 'tool_calls']);
  const notCall = await deltas('{not json}');
  assert.deepEqual([notCall.contents, notCall.calls, notCall.finish], [['{not json}'], [], 'stop']);
  const text = await deltas('hello');
  assert.deepEqual(text.contents, ['h', 'e', 'l', 'l', 'o'], 'text that cannot be a call streams at once');
  await route.close();
});
