import assert from 'node:assert/strict';
import { test } from 'node:test';
import { llmTrainingSamples, Trajectory, ValidationError, type LlmCall, type Step } from '../../schemas/index.js';
import { atifFileName, atifOfStored, turnTokens, type StoredTrajectory } from './atif.js';
import { looksLikeAtif, trajectoryFromAtif } from './atif-import.js';

const T0 = Date.parse('2026-01-02T03:04:05.000Z');

function llm(appended: number[], promptLength: number, extendsPrevious: boolean, completion: number[], policyVersion: number): LlmCall {
  return {
    model: 'smollm2-135m',
    content: null,
    finishReason: 'stop',
    promptTokens: promptLength,
    completionTokens: completion.length,
    logprobs: completion.map((id) => -id / 100),
    latencyMs: 12.5,
    attempts: 1,
    tokens: { appendedPromptIds: appended, promptLength, extendsPrevious, completionIds: completion },
    sampling: { temperature: 1, topP: 1, maxTokens: 64, seed: 7 },
    tokenizer: 'tok-1',
    chatTemplateSha256: 'abc',
    policyVersion,
    constrained: true,
    invalidReply: null,
  };
}

/** Three model turns: the second extends the first, the third starts a new sample (a re-rendered history), and one step without a model. */
function trajectory(): Trajectory {
  const step = (index: number, tool: string, call: LlmCall | null): Step => ({
    index,
    observation: `observation ${index}`,
    toolCall: { name: tool, arguments: { path: 'a.py', n: index } },
    toolResult: { ok: index !== 1, output: `output ${index}`, truncated: index === 2, exitCode: index === 1 ? 1 : 0 },
    decision: null,
    llm: call,
    startedAt: new Date(T0 + index * 1000).toISOString(),
    durationMs: 10 + index,
    sandboxMs: 5,
  });
  return Trajectory.parse({
    trajectoryId: 'run-1/t0',
    groupId: 'run-1/g0',
    groupSize: 2,
    envId: 'program-repair/v1',
    policyId: 'llm',
    steps: [
      step(0, 'read_file', llm([1, 2, 3], 3, false, [10, 11], 4)),
      step(1, 'run_tests', llm([20, 21], 7, true, [12, 13, 14], 4)),
      step(2, 'apply_edit', llm([1, 2, 3, 99], 4, false, [15], 5)),
      step(3, 'submit', null),
    ],
    finalFiles: { 'a.py': 'x = 1\n' },
    outcome: 'submitted',
    error: null,
    totalMs: 100,
    sandboxMs: 20,
    lineage: { taskId: 'task-1', attempt: 1, runId: 'run-1', policyVersion: 4, sandboxImageDigest: null, verifierVersion: null, createdAt: new Date(T0).toISOString() },
  });
}

/** The trajectory as the analytics store's columns hold it (what the sink derives from the record). */
function stored(t: Trajectory): StoredTrajectory {
  return {
    trajectoryId: t.trajectoryId,
    groupId: t.groupId,
    groupSize: t.groupSize,
    envId: t.envId,
    policyId: t.policyId,
    outcome: t.outcome,
    error: t.error,
    totalMs: t.totalMs,
    sandboxMs: t.sandboxMs,
    taskId: t.lineage.taskId,
    attempt: t.lineage.attempt,
    runId: t.lineage.runId,
    policyVersion: t.lineage.policyVersion,
    sandboxImageDigest: t.lineage.sandboxImageDigest,
    verifierVersion: t.lineage.verifierVersion,
    createdAtMs: Date.parse(t.lineage.createdAt),
    steps: t.steps.map((s) => ({
      index: s.index,
      startedAtMs: Date.parse(s.startedAt),
      tool: s.toolCall.name,
      arguments: JSON.stringify(s.toolCall.arguments),
      ok: s.toolResult.ok,
      exitCode: s.toolResult.exitCode,
      truncated: s.toolResult.truncated,
      output: s.toolResult.output,
      observation: s.observation,
      durationMs: s.durationMs,
      sandboxMs: s.sandboxMs,
      chosen: null,
      logprob: null,
      candidates: null,
    })),
    turns: t.steps.flatMap((s) =>
      s.llm
        ? [
            {
              stepIndex: s.index,
              model: s.llm.model,
              tokenizer: s.llm.tokenizer,
              chatTemplateSha256: s.llm.chatTemplateSha256,
              policyVersion: s.llm.policyVersion,
              finishReason: s.llm.finishReason,
              promptTokens: s.llm.tokens!.promptLength,
              appendedPromptTokens: s.llm.tokens!.appendedPromptIds.length,
              completionTokens: s.llm.tokens!.completionIds.length,
              extendsPrevious: s.llm.tokens!.extendsPrevious,
              latencyMs: s.llm.latencyMs,
              attempts: s.llm.attempts,
              constrained: s.llm.constrained,
              invalidReply: s.llm.invalidReply,
              temperature: s.llm.sampling!.temperature,
              topP: s.llm.sampling!.topP,
              maxTokens: s.llm.sampling!.maxTokens,
              seed: s.llm.sampling!.seed,
            },
          ]
        : [],
    ),
    samples: llmTrainingSamples(t.steps).map((s) => ({ promptIds: s.promptIds, completionIds: s.completionIds, completionLogprobs: s.completionLogprobs, stepIndices: s.stepIndices })),
    verification: { passed: true, score: 1, testsPassed: 3, testsTotal: 3, fractionPassed: 1, failure: null, verifierVersion: 'v1' },
    reward: { reward: 1, advantage: 0.5, disposition: 'learn', groupMean: 0.5, groupStd: 0.5 },
  };
}

test('turnTokens cuts each turn\'s whole prompt and completion back out of the prefix-merged samples', () => {
  const t = trajectory();
  const tokens = turnTokens(stored(t).samples, stored(t).turns);
  assert.deepEqual(tokens.get(0), { promptIds: [1, 2, 3], completionIds: [10, 11], logprobs: [-0.1, -0.11] });
  assert.deepEqual(tokens.get(1), { promptIds: [1, 2, 3, 10, 11, 20, 21], completionIds: [12, 13, 14], logprobs: [-0.12, -0.13, -0.14] });
  assert.deepEqual(tokens.get(2), { promptIds: [1, 2, 3, 99], completionIds: [15], logprobs: [-0.15] });
  assert.equal(tokens.has(3), false);
});

test('export: a user step with the task prompt, then an agent step per step with its tool call, result, token ids, and reward and verdict in the final metrics', () => {
  const document = atifOfStored(stored(trajectory()));
  assert.equal(document.schema_version, 'ATIF-v1.8');
  assert.equal(document.trajectory_id, 'run-1/t0');
  assert.equal(document.session_id, 'run-1');
  assert.deepEqual(document.agent, { name: 'llm', version: '4', model_name: 'smollm2-135m' });
  assert.deepEqual(document.steps.map((s) => [s.step_id, s.source]), [[1, 'user'], [2, 'agent'], [3, 'agent'], [4, 'agent'], [5, 'agent']]);
  assert.equal(document.steps[0]!.message, 'observation 0');
  const second = document.steps[2]!;
  assert.deepEqual(second.tool_calls, [{ tool_call_id: 'call_1', function_name: 'run_tests', arguments: { path: 'a.py', n: 1 } }]);
  assert.deepEqual(second.observation, { results: [{ source_call_id: 'call_1', content: 'output 1', extra: { trialrun: { ok: false, exit_code: 1, truncated: false } } }] });
  assert.deepEqual(second.metrics!.prompt_token_ids, [1, 2, 3, 10, 11, 20, 21]);
  assert.deepEqual(second.metrics!.completion_token_ids, [12, 13, 14]);
  assert.equal(second.llm_call_count, 1);
  const last = document.steps[4]!;
  assert.equal(last.metrics, undefined);
  assert.equal(last.llm_call_count, 0);
  assert.equal(last.model_name, undefined);
  assert.deepEqual(document.final_metrics!.extra!.trialrun, {
    reward: { reward: 1, advantage: 0.5, disposition: 'learn', group_mean: 0.5, group_std: 0.5 },
    verification: { passed: true, score: 1, tests_passed: 3, tests_total: 3, fraction_passed: 1, failure: null, verifier_version: 'v1' },
  });
  assert.equal(document.final_metrics!.total_prompt_tokens, 3 + 7 + 4);
  assert.equal(document.final_metrics!.total_completion_tokens, 6);
  assert.equal(document.final_metrics!.total_steps, 5);
});

test('export then import gives the trajectory back: ids, lineage, steps, tool calls and results, and every turn\'s token ids, logprobs and prefix flags', () => {
  const original = trajectory();
  const document = JSON.parse(JSON.stringify(atifOfStored(stored(original)))) as unknown;
  assert.ok(looksLikeAtif(document));
  const back = trajectoryFromAtif(document, { file: 'x.json' });
  // The store keeps no final files, no reply text and no decision features; everything else comes back.
  assert.deepEqual(back, { ...original, finalFiles: {}, steps: original.steps.map((s) => ({ ...s, llm: s.llm && { ...s.llm, content: null } })) });
  assert.deepEqual(llmTrainingSamples(back.steps), llmTrainingSamples(original.steps));
});

test('import of another system\'s ATIF: user messages become the observation, several tool calls several steps, a message-only step a `message` step, and the prefix rule is found from the ids', () => {
  const document = {
    schema_version: 'ATIF-v1.6',
    session_id: 'sess-9',
    agent: { name: 'mini-swe-agent', version: '2.4.6', model_name: 'gpt-x' },
    steps: [
      { step_id: 1, source: 'system', message: 'You are an agent.' },
      { step_id: 2, source: 'user', message: [{ type: 'text', text: 'Fix the bug.' }] },
      {
        step_id: 3,
        source: 'agent',
        timestamp: '2026-01-02T03:04:05Z',
        message: 'Looking.',
        tool_calls: [
          { tool_call_id: 'a', function_name: 'bash', arguments: { cmd: 'ls' } },
          { tool_call_id: 'b', function_name: 'bash', arguments: { cmd: 'cat a.py' } },
        ],
        observation: { results: [{ source_call_id: 'b', content: 'x = 1' }, { source_call_id: 'a', content: 'a.py' }] },
        metrics: { prompt_token_ids: [5, 6], completion_token_ids: [7, 8], logprobs: [-1, -2], cost_usd: 0.01 },
      },
      { step_id: 4, source: 'agent', message: 'Done.', metrics: { prompt_token_ids: [5, 6, 7, 8, 9], completion_token_ids: [10] } },
      { step_id: 5, source: 'agent', message: 'Checking.', tool_calls: [{ tool_call_id: 'c', function_name: 'bash', arguments: { cmd: 'pytest' } }] },
      { step_id: 6, source: 'agent', message: '', llm_call_count: 0, tool_calls: [{ tool_call_id: 'd', function_name: 'submit', arguments: {} }] },
      { step_id: 7, source: 'agent', message: 'Old.', is_copied_context: true, metrics: { prompt_token_ids: [1], completion_token_ids: [2] } },
    ],
    final_metrics: { total_steps: 4 },
  };
  const t = trajectoryFromAtif(document, { file: 'foreign.json' }, { taskId: 'task-7', envId: 'workspace/v1', importedAt: '2026-05-06T07:08:09.000Z' });
  assert.equal(t.trajectoryId, 'sess-9');
  assert.equal(t.lineage.runId, 'sess-9');
  assert.equal(t.lineage.taskId, 'task-7');
  assert.equal(t.policyId, 'mini-swe-agent');
  assert.equal(t.lineage.policyVersion, null, 'an agent\'s own version is no policy version');
  assert.deepEqual(t.steps.map((s) => [s.index, s.toolCall.name, s.toolCall.arguments, s.toolResult.output, s.observation]), [
    [0, 'bash', { cmd: 'ls' }, 'a.py', 'You are an agent.\nFix the bug.'],
    [1, 'bash', { cmd: 'cat a.py' }, 'x = 1', 'a.py'],
    [2, 'message', { message: 'Done.' }, '', 'x = 1'],
    [3, 'bash', { cmd: 'pytest' }, '', ''],
    [4, 'submit', {}, '', ''],
    [5, 'message', { message: 'Old.' }, '', ''],
  ]);
  assert.equal(t.steps[5]!.llm!.tokens, null, 'a copied-context step is no sample');
  assert.deepEqual([t.groupId, t.groupSize], ['sess-9', 1], 'a group of its own');
  assert.deepEqual([t.lineage.createdAt, t.steps[0]!.startedAt, t.steps[2]!.startedAt], ['2026-01-02T03:04:05.000Z', '2026-01-02T03:04:05.000Z', '2026-05-06T07:08:09.000Z']);
  assert.deepEqual([t.steps[3]!.llm?.content, t.steps[3]!.llm?.tokens, t.steps[3]!.llm?.model], ['Checking.', null, 'gpt-x'], 'a reply without metrics is still a model call, without token ids');
  assert.equal(t.steps[4]!.llm, null, 'llm_call_count 0: no model call');
  assert.equal(t.steps[0]!.llm!.content, 'Looking.');
  assert.equal(t.steps[0]!.llm!.model, 'gpt-x');
  assert.equal(t.steps[1]!.llm, null, 'one model call, on the first of its tool calls');
  assert.deepEqual(t.steps[2]!.llm!.tokens, { appendedPromptIds: [9], promptLength: 5, extendsPrevious: true, completionIds: [10] });
  assert.deepEqual(llmTrainingSamples(t.steps).map((s) => [s.promptIds, s.completionIds, s.completionMask]), [[[5, 6], [7, 8, 9, 10], [1, 1, 0, 1]]]);
});

/** The message of what `trajectoryFromAtif` throws. */
function rejection(document: unknown, options = {}): string {
  try {
    trajectoryFromAtif(document, { file: 'bad.jsonl', line: 3 }, { taskId: 't', envId: 'e', ...options });
  } catch (error) {
    assert.ok(error instanceof ValidationError);
    return error.message;
  }
  assert.fail('accepted');
}

test('bad input: not ATIF at all, and bad fields, named with the file, the step and the field', () => {
  const good = (): Record<string, unknown> & { steps: Array<Record<string, unknown>> } => ({
    schema_version: 'ATIF-v1.8',
    agent: { name: 'a', version: '1' },
    steps: [{ step_id: 1, source: 'agent', message: '', tool_calls: [{ tool_call_id: 'c', function_name: 'bash', arguments: {} }], metrics: { prompt_token_ids: [1], completion_token_ids: [2, 3], logprobs: [-1, -1] } }],
  });
  assert.doesNotThrow(() => trajectoryFromAtif(good(), { file: 'ok.json' }, { taskId: 't', envId: 'e' }));
  assert.match(rejection({ rows: [1, 2] }), /^ATIF bad\.jsonl:3 is invalid: not an ATIF trajectory \(schema_version: .*agent: .*steps: /);
  assert.match(rejection({ ...good(), schema_version: 'v2' }), /not an ATIF trajectory \(schema_version: /);

  const lengths = good();
  (lengths.steps[0]!.metrics as Record<string, unknown>).logprobs = [-1];
  assert.match(rejection(lengths), /bad\.jsonl:3 .*steps\[0\] \(step_id 1\)\.metrics\.logprobs: 1 logprobs for 2 completion tokens/);

  const ids = good();
  (ids.steps[0]!.metrics as Record<string, unknown>).completion_token_ids = [2, -3];
  assert.match(rejection(ids), /steps\[0\] \(step_id 1\)\.metrics\.completion_token_ids\[1\]: /);

  const args = good();
  (args.steps[0]!.tool_calls as Array<Record<string, unknown>>)[0]!.arguments = 'ls -la';
  assert.match(rejection(args), /steps\[0\] \(step_id 1\)\.tool_calls\[0\]\.arguments: /);

  const order = good();
  order.steps[0]!.step_id = 2;
  assert.match(rejection(order), /steps\[0\] \(step_id 2\)\.step_id: expected 1/);

  const time = good();
  time.steps[0]!.timestamp = 'yesterday';
  assert.match(rejection(time), /steps\[0\] \(step_id 1\)\.timestamp: not an ISO 8601 time/);

  assert.match(rejection(good(), { taskId: undefined }), /extra\.trialrun\.task_id: the file names no task; give one with --task/);
  assert.match(rejection({ ...good(), extra: { trialrun: { outcome: 'won' } } }), /extra\.trialrun\.outcome: /);
});

test('file names: safe characters, and distinct for ids that differ only in unsafe ones', () => {
  assert.match(atifFileName('run-1/t0'), /^run-1_t0\.[0-9a-f]{8}\.json$/);
  assert.notEqual(atifFileName('a/b'), atifFileName('a:b'));
});
