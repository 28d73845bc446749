import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PROGRAM_REPAIR, type RepairObservation } from '../../envs/index.js';
import { ChatStandIn, toolCallChoice as choice } from '../../test/fixtures/chat-stand-in.js';
import { seededRandom } from '../types.js';
import { resolveLlmPolicyOptions } from './options.js';
import { INVALID_REPLY, LlmPolicy } from './policy.js';

/** The function-calling path against a stand-in vLLM: the token-exact llama.cpp path is tested against the real server in test/integration/llm-episode.test.ts. */
const standIn = new ChatStandIn();
const { replies, requests } = standIn;
let baseUrl = '';
before(async () => {
  await standIn.listen();
  baseUrl = standIn.baseUrl;
});
after(() => standIn.close());

const observation = (maxTurns: number, lastResult: RepairObservation['lastResult'] = null): RepairObservation => ({
  description: 'Fix it.', modulePath: 'mod.py', moduleSource: 'x = 1\n', moduleLineCount: 3, functions: [], turn: 0, maxTurns, lastTests: null, baselineTests: null, edits: null, applied: null, tried: [], lastTool: null, lastResult,
});

test('on vLLM a call is required of every reply, token ids are recorded, and a prompt extends the previous turn only where its ids do', async () => {
  const policy = new LlmPolicy(resolveLlmPolicyOptions({ baseUrl, model: 'm', seed: 5 }, {}), 3);
  const actor = policy.startEpisode(PROGRAM_REPAIR);
  const random = seededRandom('x');
  // vLLM echoes the model asked for: the adapter weight sync loaded for v3.
  replies.push((body) => ({ model: body.model, prompt_token_ids: [1, 2], choices: [choice([{ name: 'run_tests', arguments: '{}' }], [9])], usage: { prompt_tokens: 2, completion_tokens: 1 } }));
  const first = await actor.act(observation(4), random);
  assert.deepEqual(first.action, { name: 'run_tests', arguments: {} });
  assert.deepEqual(first.llm!.tokens, { appendedPromptIds: [1, 2], promptLength: 2, extendsPrevious: false, completionIds: [9] });
  assert.deepEqual([first.llm!.constrained, first.llm!.policyVersion, first.llm!.sampling!.seed], [true, 3, 5]);
  const sent = requests.at(-1)!;
  assert.equal(sent.model, 'm@v3');
  assert.equal(sent.tool_choice, 'required');
  assert.equal(sent.return_token_ids, true);
  assert.equal((sent.tools as unknown[]).length, 7, 'the environment\'s seven tools');

  // A reply that names another version is stamped with the version it names, whatever was asked for.
  replies.push(() => ({ model: 'm@v2', prompt_token_ids: [1, 2, 9, 4], choices: [choice([{ name: 'read_file', arguments: '{"path": ' }], [8])] }));
  const second = await actor.act(observation(4, { ok: true, output: '1 passed', truncated: false, exitCode: 0 }), random);
  assert.deepEqual(second.llm!.tokens, { appendedPromptIds: [4], promptLength: 4, extendsPrevious: true, completionIds: [8] });
  assert.equal(second.llm!.policyVersion, 2);
  // The tool result went back by call id; the broken arguments make a failed turn.
  assert.deepEqual((requests.at(-1)!.messages as Array<Record<string, unknown>>).at(-1), { role: 'tool', content: 'run_tests ok:\n1 passed', tool_call_id: 'c0' });
  assert.equal(second.action.name, INVALID_REPLY);
  assert.match(second.invalid!, /arguments of "read_file" are not JSON/);
  assert.equal(second.llm!.invalidReply, second.invalid);

  // The server re-rendered the chat differently: the prompt is recorded whole, not as an extension.
  replies.push(() => ({ model: 'm', prompt_token_ids: [1, 3, 9, 4, 8, 5], choices: [choice([{ name: 'submit', arguments: '{}' }], [7])] }));
  const third = await actor.act(observation(4), random);
  const told = (requests.at(-1)!.messages as Array<Record<string, unknown>>).at(-1)!;
  assert.match(String(told.content), /^invalid reply: the arguments of "read_file" are not JSON/);
  assert.deepEqual(third.llm!.tokens, { appendedPromptIds: [1, 3, 9, 4, 8, 5], promptLength: 6, extendsPrevious: false, completionIds: [7] });
  assert.equal(third.action.name, 'submit');
});

test('a reply that calls no tool is an invalid reply; the policy counts no turns (runEpisode caps every reply) and asks the model again', async () => {
  const policy = new LlmPolicy(resolveLlmPolicyOptions({ baseUrl, model: 'm', server: 'openai' }, {}), 0);
  const actor = policy.startEpisode(PROGRAM_REPAIR);
  replies.push(() => ({ model: 'm', choices: [{ message: { content: 'I will think about it.' }, finish_reason: 'stop' }] }));
  const first = await actor.act(observation(1), seededRandom('y'));
  assert.equal(first.action.name, INVALID_REPLY);
  assert.match(first.invalid!, /called no tool/);
  assert.equal(first.llm!.tokens, null, 'an OpenAI server gives no token ids');
  assert.equal(first.llm!.policyVersion, 0, 'a model name without @v<N> is the base model');
  assert.equal(requests.at(-1)!.tool_choice, 'auto');
  assert.equal(requests.at(-1)!.return_token_ids, undefined);
  const calls = requests.length;
  replies.push(() => ({ model: 'm', choices: [choice([{ name: 'submit', arguments: '{}' }], [1])] }));
  const next = await actor.act(observation(1), seededRandom('y'));
  assert.equal(next.action.name, 'submit');
  assert.equal(requests.length, calls + 1, 'the model was asked again: the cap is not the policy\'s');
  assert.match(String((requests.at(-1)!.messages as Array<Record<string, unknown>>).at(-1)!.content), /^invalid reply: the reply called no tool/);
});
