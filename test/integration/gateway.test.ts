import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { repoRoot } from '../../cli/paths.js';
import { LlamaCppClient, LlmGateway } from '../../connectors/llm/index.js';
import { llmTrainingSamples, type LlmCall } from '../../schemas/index.js';
import { cachedVenv, freePort, llmComponent, stackPaths, stackUp } from '../../stack/index.js';
import { tempDir } from './harness.js';

const run = promisify(execFile);

/**
 * The gateway against a real llama.cpp server of this test's own (a free port, its own state folder: the stack's
 * shared server is never restarted), driven by the official `openai` Python client as a harness would drive it:
 * plain and streamed calls, a tool offered, history re-sent verbatim and then rewritten, and refused calls. Every
 * record must detokenise to exactly what the client received.
 */
const OPENAI = '3.63.0';
const stateDir = tempDir('gateway-llm-state');
let url = '';
let gateway: LlmGateway;
let server: LlamaCppClient;
let python = '';

const serverOptions = () => ({ url, external: false, daemonName: 'llm-gateway-test', paths: { stateDir, cacheDir: stackPaths().cacheDir }, parallel: 1, contextTokens: 2048 });

before(async () => {
  url = `http://127.0.0.1:${await freePort()}/v1`;
  await stackUp((line) => console.log(`# ${line}`), [llmComponent(serverOptions())]);
  server = new LlamaCppClient({ rootUrl: url.replace(/\/v1$/, '') });
  gateway = await LlmGateway.start({ baseUrl: url });
  python = await cachedVenv(
    { dir: join(stackPaths().cacheDir, `test-openai-${OPENAI}-venv`), installs: [[`openai==${OPENAI}`]], check: 'import openai', what: `openai ${OPENAI} (the official Python client)` },
    'python3',
    join(tempDir('openai-venv'), 'pip.log'),
    (line) => console.log(`# ${line}`),
  );
}, { timeout: 900_000 });

after(async () => {
  await gateway?.stop();
  await llmComponent(serverOptions()).stop(() => {});
});

interface Turn {
  stream: boolean;
  finish_reason: string;
  content: string | null;
  tool_calls: Array<{ id: string; name: string; arguments: string }>;
  chunks?: number;
}
interface Refusal {
  status: number;
  code: string | null;
  param: string | null;
  message: string | null;
}

/** What the client received for a turn, as the text the model wrote: its content, or the call it made. */
async function assertReceivedIsRecorded(turn: Turn, record: LlmCall, i: number): Promise<void> {
  const ids = record.tokens!.completionIds;
  assert.equal(record.logprobs!.length, ids.length, `turn ${i}: one logprob per sampled token`);
  assert.ok(record.logprobs!.every((l) => Number.isFinite(l) && l <= 0), `turn ${i}: logprobs`);
  const decoded = await server.detokenize(ids);
  const eos = (await server.identity()).eosToken!;
  const text = record.finishReason === 'stop' ? decoded.slice(0, -eos.length) : decoded;
  if (record.finishReason === 'stop') assert.ok(decoded.endsWith(eos), `turn ${i}: a reply that stopped ends with the end-of-generation token`);
  assert.equal(text, record.content, `turn ${i}: the record's ids are its content`);
  if (turn.tool_calls.length > 0) {
    assert.equal(turn.finish_reason, 'tool_calls');
    const written = JSON.parse(text) as { name: string; arguments: unknown };
    assert.deepEqual([turn.tool_calls[0]!.name, JSON.parse(turn.tool_calls[0]!.arguments)], [written.name, written.arguments ?? {}], `turn ${i}: the call is what the model wrote`);
  } else {
    assert.equal(turn.content, text, `turn ${i}: the client received exactly what the ids decode to`);
    assert.equal(turn.finish_reason, record.finishReason);
  }
}

test('the official openai client through the gateway: streamed and plain replies are token-exact records, re-sent history extends one sequence, rewritten history is drift, refusals are OpenAI errors', { timeout: 900_000 }, async () => {
  const route = gateway.open({ maxCalls: 4 });
  const other = gateway.open();
  const { stdout } = await run('nice', ['-n', '19', python, join(repoRoot(), 'test', 'integration', 'python', 'gateway_client.py'), route.baseUrl, route.apiKey, other.apiKey], { timeout: 800_000, maxBuffer: 1 << 24 });
  const received = JSON.parse(stdout.trim().split('\n').pop()!) as { model: string; turns: Turn[]; refusals: Record<string, Refusal> };
  const records = await route.close();
  assert.deepEqual(await other.close(), [], 'the other episode holds none of these calls');
  console.log(`# ${records.length} calls: ${records.map((r) => `${r.tokens!.appendedPromptIds.length}+${r.completionTokens} tokens ${r.finishReason}${r.tokens!.drift ? ' drift' : ''}`).join(', ')}; tool calls parsed: ${received.turns.filter((t) => t.tool_calls.length > 0).length}`);

  assert.equal(received.model, (await server.identity()).model);
  assert.equal(records.length, 4);
  for (const [i, turn] of received.turns.entries()) await assertReceivedIsRecorded(turn, records[i]!, i);
  const streamed = received.turns[1]!;
  assert.ok(streamed.stream && (streamed.chunks ?? 0) >= 3, 'the streamed turn came as chunks');
  // Token by token (role, one chunk per text token, finish, usage), unless it opened like a tool call and was held.
  if (!/^\s*[{<]/.test(streamed.content ?? '')) assert.ok(streamed.chunks! >= records[1]!.completionTokens!, `${streamed.chunks} chunks for ${records[1]!.completionTokens} tokens`);
  for (const record of records) {
    assert.equal(record.policyVersion, 0);
    assert.equal(record.tokenizer, (await server.identity()).tokenizer);
    assert.equal(record.sampling!.temperature, 0.8);
    assert.ok(record.sampling!.maxTokens <= 24);
  }
  assert.deepEqual(records.map((r) => r.sampling!.seed), [11, 12, 13, 14]);

  // Turns 2 and 3 re-sent the history as received: one sequence, nothing re-tokenised; turn 4 rewrote a reply.
  assert.deepEqual(records.map((r) => r.tokens!.extendsPrevious), [false, true, true, false]);
  assert.deepEqual(records.slice(0, 3).map((r) => r.tokens!.drift), [undefined, undefined, undefined]);
  const drift = records[3]!.tokens!.drift!;
  assert.equal(drift.previousTokens, records[2]!.tokens!.promptLength + records[2]!.tokens!.completionIds.length);
  assert.ok(drift.matchingTokens >= records[0]!.tokens!.promptLength && drift.matchingTokens <= records[0]!.tokens!.promptLength + records[0]!.tokens!.completionIds.length, `it parted inside or right after the first reply: ${JSON.stringify(drift)}, first call ${records[0]!.tokens!.promptLength}+${records[0]!.tokens!.completionIds.length}`);
  const samples = llmTrainingSamples(records.map((llm, index) => ({ index, llm })));
  assert.deepEqual(samples.map((s) => s.stepIndices), [[0, 1, 2], [3]], 'the prefix rule starts a new sample at the drift');
  // The first sample decodes to the template's rendering of the conversation the client held, replies as sampled.
  const [sample] = samples;
  const text = await server.detokenize([...sample!.promptIds, ...sample!.completionIds]);
  assert.ok(text.startsWith(await server.detokenize(records[0]!.tokens!.appendedPromptIds)));
  for (const turn of received.turns.slice(0, 3)) assert.ok(turn.tool_calls.length > 0 || text.includes(turn.content!), 'every reply is in the sequence as the client received it');
  assert.ok(!/<\|im_end\|><\|im_end\|>/.test(text), 'no end-of-turn token twice');

  assert.deepEqual([received.refusals.over_budget!.status, received.refusals.over_budget!.code], [429, 'episode_budget_exhausted']);
  assert.deepEqual([received.refusals.other_key!.status, received.refusals.other_key!.code], [401, 'invalid_api_key']);
  assert.deepEqual([received.refusals.bad_field!.status, received.refusals.bad_field!.param], [400, 'temperature']);
  // After the episode ends its route answers 410, with its own key.
  const late = await fetch(`${route.baseUrl}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${route.apiKey}` }, body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }) });
  assert.equal(late.status, 410);
  assert.equal(((await late.json()) as { error: { code: string } }).error.code, 'episode_ended');
});
