import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PROGRAM_REPAIR, REPAIR_TOOL_DEFS, toolSpec, type CandidateEdit, type RepairObservation } from '../../envs/index.js';
import type { ToolResult } from '../../schemas/index.js';
import { ChatStandIn, toolCallChoice } from '../../test/fixtures/chat-stand-in.js';
import { failingRun, repairObservation } from '../../test/fixtures/repair-observation.js';
import { seededRandom } from '../types.js';
import { llmPolicyKind } from './kind.js';
import { resolveLlmPolicyOptions } from './options.js';
import { INVALID_REPLY } from './policy.js';
import { describeCandidate, editChoiceSpec, LlmRepairPolicy, REPAIR_SCRIPT_INSTRUCTIONS } from './repair-scaffold.js';

const standIn = new ChatStandIn();
before(() => standIn.listen());
after(() => standIn.close());

const SOURCE = 'def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    return min(x, hi)\n';
const EDITS: readonly CandidateEdit[] = [
  { id: 0, kind: 'compare-op', line: 2, col: 9, before: '<', after: '<=' },
  { id: 1, kind: 'return-value', line: 3, col: 15, before: 'lo', after: 'hi' },
  { id: 2, kind: 'swap-args', line: 4, col: 15, before: 'x, hi', after: 'hi, x' },
];
const ran = (output: string): ToolResult => ({ ok: true, output, truncated: false, exitCode: 1 });
const passingRun = { ...failingRun, passed: true, passedCount: 1, failedCount: 0, failureKinds: [] };

/** The observations the environment hands the script, turn by turn, for a first edit that fails and a second that passes. */
const at = (turn: number, overrides: Partial<RepairObservation>): RepairObservation => repairObservation({ description: 'Fix clamp.', moduleSource: SOURCE, turn, maxTurns: 8, ...overrides });
const replyChoosing = (id: number, tokenIds: number[], promptIds: number[]) => (body: Record<string, unknown>) => ({
  model: body.model,
  prompt_token_ids: promptIds,
  choices: [toolCallChoice([{ name: 'apply_edit', arguments: JSON.stringify({ id }) }], tokenIds)],
});

test('the candidates are shown with the whole line they change, and the reply is narrowed to their ids', () => {
  const lines = SOURCE.split('\n');
  assert.equal(describeCandidate(EDITS[0]!, lines), '#0 line 2 (compare-op): if x < lo:  ->  if x <= lo:');
  assert.equal(describeCandidate(EDITS[2]!, lines), '#2 line 4 (swap-args): return min(x, hi)  ->  return min(hi, x)');
  // An edit whose text is not where it says (one spanning lines) is shown as the tool lists it.
  assert.equal(describeCandidate({ id: 5, kind: 'off-by-one', line: 3, col: 0, before: 'while', after: 'if' }, lines), '#5 line 3:0 (off-by-one): while -> if');
  const spec = editChoiceSpec([EDITS[0]!, EDITS[2]!]);
  const env = toolSpec(REPAIR_TOOL_DEFS.find((def) => def.name === 'apply_edit')!);
  assert.equal(spec.name, 'apply_edit');
  assert.equal(spec.description, env.description);
  assert.deepEqual((spec.parameters as { properties: { id: { enum: number[] } } }).properties.id.enum, [0, 2]);
  assert.deepEqual({ ...(spec.parameters as { properties: object }), properties: null }, { ...(env.parameters as { properties: object }), properties: null }, 'only the id is narrowed');
});

test('the script makes every call but the edit choice; the model reads each result before its next choice and may pick only untried edits', async () => {
  const policy = new LlmRepairPolicy(resolveLlmPolicyOptions({ baseUrl: standIn.baseUrl, model: 'm', scaffold: 'repair-script' }, {}), 2);
  const actor = policy.startEpisode(PROGRAM_REPAIR);
  const random = seededRandom('scaffold');
  const act = (observation: RepairObservation) => actor.act(observation, random);

  // The tests and the listing are the script's: no model call.
  assert.equal((await act(at(0, {}))).action.name, 'run_tests');
  assert.equal((await act(at(1, { baselineTests: failingRun, lastTests: failingRun, lastTool: 'run_tests', lastResult: ran('F\n1 failed') }))).action.name, 'list_edits');
  assert.equal(standIn.requests.length, 0);

  const listed = { baselineTests: failingRun, lastTests: failingRun, edits: EDITS };
  standIn.replies.push(replyChoosing(1, [7, 8], [1, 2, 3]));
  const first = await act(at(2, { ...listed, lastTool: 'list_edits', lastResult: ran('3 candidate edits ...') }));
  assert.deepEqual(first.action, { name: 'apply_edit', arguments: { id: 1 } });
  assert.equal(first.decision, null);
  assert.deepEqual(first.llm!.tokens!.completionIds, [7, 8]);
  const [system, user] = standIn.lastMessages();
  assert.deepEqual(system, { role: 'system', content: REPAIR_SCRIPT_INSTRUCTIONS });
  assert.equal(user!.content, [
    'Fix clamp.',
    'run_tests ok:\nF\n1 failed',
    'list_edits ok:\n3 candidate edits of m.py (id, line, kind: the line before  ->  after):\n' +
      '#0 line 2 (compare-op): if x < lo:  ->  if x <= lo:\n#1 line 3 (return-value): return lo  ->  return hi\n#2 line 4 (swap-args): return min(x, hi)  ->  return min(hi, x)',
  ].join('\n\n'));
  const tools = standIn.requests.at(-1)!.tools as Array<{ function: { name: string; parameters: { properties: { id: { enum: number[] } } } } }>;
  assert.deepEqual(tools.map((t) => [t.function.name, t.function.parameters.properties.id.enum]), [['apply_edit', [0, 1, 2]]]);

  // The edit failed the tests: the script re-runs them and reverts, then the model chooses among the others.
  const applied = { ...listed, applied: EDITS[1]! };
  assert.equal((await act(at(3, { ...applied, lastTests: null, lastTool: 'apply_edit', lastResult: ran('applied edit 1') }))).action.name, 'run_tests');
  assert.equal((await act(at(4, { ...applied, lastTool: 'run_tests', lastResult: ran('F\nstill failing') }))).action.name, 'revert');
  standIn.replies.push(replyChoosing(2, [9], [1, 2, 3, 7, 8, 4]));
  const second = await act(at(5, { ...listed, lastTests: null, tried: [1], lastTool: 'revert', lastResult: ran('reverted') }));
  assert.deepEqual(second.action, { name: 'apply_edit', arguments: { id: 2 } });
  assert.deepEqual(second.llm!.tokens, { appendedPromptIds: [4], promptLength: 6, extendsPrevious: true, completionIds: [9] });
  assert.deepEqual(standIn.lastMessages().at(-1), {
    role: 'tool',
    tool_call_id: 'c0',
    content: 'apply_edit ok:\napplied edit 1\n\nrun_tests ok:\nF\nstill failing\n\nrevert ok:\nreverted\n\nEdits not tried yet: #0, #2.',
  });
  const narrowed = standIn.requests.at(-1)!.tools as Array<{ function: { parameters: { properties: { id: { enum: number[] } } } } }>;
  assert.deepEqual(narrowed[0]!.function.parameters.properties.id.enum, [0, 2]);

  // It passes: the script submits, and the model is not asked again.
  const calls = standIn.requests.length;
  assert.equal((await act(at(6, { ...listed, applied: EDITS[2]!, tried: [1], lastTests: null, lastTool: 'apply_edit', lastResult: ran('applied edit 2') }))).action.name, 'run_tests');
  assert.equal((await act(at(7, { ...listed, applied: EDITS[2]!, tried: [1], lastTests: passingRun, lastTool: 'run_tests', lastResult: ran('1 passed') }))).action.name, 'submit');
  assert.equal(standIn.requests.length, calls);
});

test('an invalid reply is told back at the next choice, on the same observation, without the results already read', async () => {
  const policy = new LlmRepairPolicy(resolveLlmPolicyOptions({ baseUrl: standIn.baseUrl, model: 'm', server: 'openai', scaffold: 'repair-script' }, {}), 0);
  const actor = policy.startEpisode(PROGRAM_REPAIR);
  const observation = at(2, { baselineTests: failingRun, lastTests: failingRun, edits: EDITS, lastTool: 'list_edits', lastResult: ran('listed') });
  standIn.replies.push(() => ({ model: 'm', choices: [{ message: { content: 'the second one' }, finish_reason: 'stop' }] }));
  const refused = await actor.act(observation, seededRandom('i'));
  assert.equal(refused.action.name, INVALID_REPLY);
  standIn.replies.push(replyChoosing(0, [5], [1]));
  const chosen = await actor.act(observation, seededRandom('i'));
  assert.deepEqual(chosen.action, { name: 'apply_edit', arguments: { id: 0 } });
  assert.deepEqual(standIn.lastMessages().at(-1), { role: 'user', content: 'invalid reply: the reply called no tool; call exactly one tool per reply\n\nEdits not tried yet: #0, #1, #2.' });
});

test('a policy of the repair script serves program repair only, and its kind says so before anything starts', async () => {
  const options = resolveLlmPolicyOptions({ baseUrl: standIn.baseUrl, scaffold: 'repair-script' }, {});
  assert.deepEqual(llmPolicyKind(options).serves, ['program-repair/v1']);
  assert.equal(llmPolicyKind(resolveLlmPolicyOptions({ baseUrl: standIn.baseUrl }, {})).serves, 'any');
  assert.ok((await llmPolicyKind(options).load({ model: 'm' }, 3)) instanceof LlmRepairPolicy);
});
