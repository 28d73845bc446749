import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { repoRoot } from '../../cli/paths.js';
import { LocalCheckpointStore } from '../../connectors/checkpoints/index.js';
import { LlamaCppClient } from '../../connectors/llm/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { envToolSpecs, makeEnv, PROGRAM_REPAIR, type RepairObservation } from '../../envs/index.js';
import { runLoop } from '../../pipelines/loop/index.js';
import { runEpisode, type EpisodeResult } from '../../pipelines/rollout-worker/index.js';
import { prepareTasks } from '../../pipelines/jobs/task-job/index.js';
import { INVALID_REPLY, LLM_POLICY, LlmPolicy, LlmRepairPolicy, resolveLlmPolicyOptions, seededRandom, type LlmEpisode, type LlmPolicyOptions, type Policy } from '../../policies/index.js';
import { llmTrainingSamples, STACK_LLM_URL, type Step, type Task, type TrajectoryOutcome } from '../../schemas/index.js';
import { imageFor, llmComponent, stackUp } from '../../stack/index.js';
import { serveBaseModel } from '../../pipelines/weight-sync/index.js';
import { loopWeightServer } from '../../cli/weight-server.js';
import { ensureStack, freshContext, readAll, tempDir } from './harness.js';

/**
 * Against the stack's real model server (llama.cpp serving SmolLM2-135M-Instruct on the CPU, tens of
 * tokens per second here): few, short episodes.
 */
const pool = new DockerSandboxPool();
const server = new LlamaCppClient({ rootUrl: STACK_LLM_URL.replace(/\/v1$/, '') });
let task: Task;
before(async () => {
  await ensureStack();
  await stackUp((line) => console.log(`# ${line}`), [llmComponent({ url: STACK_LLM_URL, external: false })]);
  // The turns below must come from the base weights: a server an earlier run left on one of its adapters (a `learn`
  // stopped before it restored the base) answers as that version.
  await serveBaseModel(loopWeightServer(policyOptions({}))!);
  const tasks = (await prepareTasks({ file: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'), rejectsDir: tempDir('llm-rejects') })).tasks;
  task = tasks[0]!;
}, { timeout: 900_000 });
after(() => pool.close());

const policyOptions = (options: LlmPolicyOptions) => resolveLlmPolicyOptions({ baseUrl: STACK_LLM_URL, server: 'llama.cpp', ...options }, {});

/** One episode of `actor`, kept by the caller so that its transcript can be compared with the recorded tokens. */
async function playWith(actor: Policy<RepairObservation>, maxTurns: number, seed: string): Promise<EpisodeResult> {
  const once: Policy<RepairObservation> = { policyId: actor.policyId, version: actor.version, act: () => Promise.reject(new Error('unused')), startEpisode: () => actor };
  const env = makeEnv(task.envId, { pool, runId: 'llm-it', imageFor, maxTurns });
  return runEpisode(PROGRAM_REPAIR, env, () => env.init(task), once as Policy<unknown>, seededRandom(seed), new AbortController().signal);
}

async function playEpisode(options: LlmPolicyOptions, maxTurns: number, seed: string): Promise<{ steps: Step[]; outcome: TrajectoryOutcome; actor: LlmEpisode }> {
  const actor = new LlmPolicy(policyOptions(options), 0).startEpisode(PROGRAM_REPAIR);
  const { steps, outcome } = await playWith(actor, maxTurns, seed);
  return { steps, outcome, actor };
}

test('a multi-turn episode on llama.cpp is token-exact: one growing sequence that detokenises to its transcript, with a mask over exactly the model tokens', { timeout: 900_000 }, async () => {
  const { steps, actor } = await playEpisode({ maxTokensPerTurn: 96 }, 3, 'token-exact');
  const turns = steps.filter((step) => step.llm !== null);
  assert.ok(turns.length >= 2, `at least two model turns, got ${turns.length}`);
  const identity = await server.identity();
  let length = 0;
  for (const [i, { llm }] of turns.entries()) {
    const tokens = llm!.tokens!;
    assert.equal(llm!.logprobs!.length, tokens.completionIds.length, `turn ${i}: one logprob per completion token`);
    assert.equal(llm!.completionTokens, tokens.completionIds.length);
    assert.equal(llm!.constrained, true);
    assert.equal(llm!.chatTemplateSha256, identity.chatTemplateSha256);
    assert.equal(llm!.tokenizer, identity.tokenizer);
    assert.equal(llm!.policyVersion, 0);
    assert.ok(llm!.sampling && llm!.sampling.seed !== null && llm!.sampling.maxTokens === 96);
    // Never re-tokenised: each prompt is the previous prompt and completion with the new part appended.
    assert.equal(tokens.extendsPrevious, i > 0);
    assert.equal(tokens.promptLength, length + tokens.appendedPromptIds.length, `turn ${i} extends the sequence so far`);
    length = tokens.promptLength + tokens.completionIds.length;
    // The sampled ids are the reply: its text, then at most the end-of-generation token.
    const decoded = await server.detokenize(tokens.completionIds);
    if (decoded !== llm!.content) {
      assert.equal(llm!.finishReason, 'stop', `turn ${i}: completion ids decode to the reply`);
      assert.equal(await server.detokenize(tokens.completionIds.slice(0, -1)), llm!.content, `turn ${i}: completion ids decode to the reply and its end-of-generation token`);
    }
  }
  const samples = llmTrainingSamples(steps);
  assert.equal(samples.length, 1, 'one sample: no prompt had to be rebuilt');
  const [sample] = samples;
  const ids = [...sample!.promptIds, ...sample!.completionIds];
  assert.equal(ids.length, length);
  assert.deepEqual(sample!.promptIds, turns[0]!.llm!.tokens!.appendedPromptIds, 'the prompt is the first turn\'s');
  assert.equal(sample!.completionMask.length, sample!.completionIds.length);
  assert.equal(sample!.completionLogprobs.length, sample!.completionIds.length);
  // The mask is 1 exactly on the sampled tokens, and those are the completions in order, with their logprobs.
  assert.deepEqual(sample!.completionIds.filter((_, i) => sample!.completionMask[i] === 1), turns.flatMap(({ llm }) => llm!.tokens!.completionIds));
  assert.deepEqual(sample!.completionLogprobs.filter((_, i) => sample!.completionMask[i] === 1), turns.flatMap(({ llm }) => llm!.logprobs!));
  assert.deepEqual(sample!.stepIndices, turns.map((step) => step.index));
  // The whole sequence decodes to the chat template's rendering of the transcript (each reply as sampled,
  // end-of-generation token included), up to the end of the last reply.
  const replies = await Promise.all(turns.map(({ llm }) => server.detokenize(llm!.tokens!.completionIds)));
  let reply = 0;
  const transcript = actor.transcript().map((m) => (m.role === 'assistant' ? { ...m, content: replies[reply++]! } : m));
  const rendered = await server.applyTemplate(transcript);
  const text = await server.detokenize(ids);
  assert.equal(rendered.slice(0, text.length), text);
  assert.ok(text.endsWith(replies.at(-1)!));
  // The environment's own tool specs were offered: the system prompt names each of them.
  for (const tool of envToolSpecs(PROGRAM_REPAIR)) assert.ok(actor.transcript()[0]!.content.includes(`"name": "${tool.name}"`));
});

test('a reply that is no valid call (cut off at its token limit) is a failed turn the model is told about; it counts against the turn cap', { timeout: 600_000 }, async () => {
  const { steps, outcome } = await playEpisode({ maxTokensPerTurn: 3 }, 2, 'invalid');
  const [first, second] = steps;
  for (const step of [first!, second!]) {
    assert.equal(step.toolCall.name, INVALID_REPLY);
    assert.equal(step.toolResult.ok, false);
    assert.match(step.llm!.invalidReply!, /not one JSON object/);
    assert.equal(step.llm!.finishReason, 'length');
    assert.equal(step.sandboxMs, 0, 'the environment was not stepped');
  }
  const told = await server.detokenize(second!.llm!.tokens!.appendedPromptIds);
  assert.match(told, /invalid reply: the reply is not one JSON object/);
  // Two replies, both invalid, were the cap: runEpisode ends the episode there, truncated, without another model call.
  assert.equal(steps.length, 2);
  assert.equal(outcome, 'max-turns');
});

test('under the repair script the model makes only the edit choices, each an untried candidate, in one token-exact sequence that carries the script\'s results', { timeout: 600_000 }, async () => {
  const steps = (await playWith(new LlmRepairPolicy(policyOptions({ maxTokensPerTurn: 48, scaffold: 'repair-script' }), 0).startEpisode(PROGRAM_REPAIR), 8, 'scaffold')).steps;
  assert.deepEqual(steps.slice(0, 3).map((step) => step.toolCall.name), ['run_tests', 'list_edits', 'apply_edit']);
  const listed = new Set([...steps[1]!.toolResult.output.matchAll(/^#(\d+) /gm)].map((match) => Number(match[1])));
  assert.ok(listed.size > 1, `several candidates listed:\n${steps[1]!.toolResult.output}`);
  const choices = steps.filter((step) => step.llm !== null);
  assert.ok(choices.length >= 1);
  const chosen: number[] = [];
  for (const { toolCall, llm } of choices) {
    assert.equal(toolCall.name, 'apply_edit', 'the model only ever applies an edit');
    const id = toolCall.arguments.id as number;
    assert.ok(listed.has(id) && !chosen.includes(id), `edit ${id} is a candidate not tried before (${[...chosen]})`);
    chosen.push(id);
    assert.deepEqual(JSON.parse(llm!.content!), { name: 'apply_edit', arguments: { id } });
    // The call's opening was given in the prompt: the model sampled the id, the closing braces, the end of its turn.
    const opening = '{"name": "apply_edit", "arguments": {"id":';
    assert.ok((await server.detokenize(llm!.tokens!.appendedPromptIds)).endsWith(opening), 'the prompt ends with the call\'s opening');
    // The sampled ids decode to the rest of the reply, then at most the end-of-generation token.
    const sampled = llm!.tokens!.completionIds;
    const rest = (await server.detokenize(sampled)) === llm!.content!.slice(opening.length) ? sampled : sampled.slice(0, -1);
    assert.equal(opening + (await server.detokenize(rest)), llm!.content);
    assert.ok(llm!.tokens!.completionIds.length <= 6, `only the value and the close are sampled: ${llm!.tokens!.completionIds.length} tokens`);
  }
  assert.ok(steps.filter((step) => step.llm === null).every((step) => step.toolCall.name !== 'apply_edit'), 'the script never chooses an edit');
  const [sample, ...others] = llmTrainingSamples(steps);
  assert.deepEqual(others, [], 'one sequence for the episode');
  assert.deepEqual(sample!.completionIds.filter((_, i) => sample!.completionMask[i] === 1), choices.flatMap(({ llm }) => llm!.tokens!.completionIds));
  if (choices.length > 1) {
    // What the model read before its second choice: the script's re-run of the tests and its revert.
    const read = await server.detokenize(choices[1]!.llm!.tokens!.appendedPromptIds);
    assert.match(read, /run_tests (ok|failed):[\s\S]*revert ok:\nreverted[\s\S]*Edits not tried yet: /);
  }
});

test('an episode of program-repair/v1 with the llm policy runs through the rollout worker to a verification, its tokens intact through the registry', { timeout: 900_000 }, async () => {
  const context = await freshContext('llm-loop');
  const llm = resolveLlmPolicyOptions({ baseUrl: STACK_LLM_URL, maxTokensPerTurn: 96 }, {});
  const summary = await runLoop(context, {
    tasks: [task],
    dataDir: tempDir('llm-loop'),
    pool,
    imageFor,
    checkpoints: new LocalCheckpointStore(tempDir('llm-checkpoints')),
    policyId: LLM_POLICY,
    llm,
    groupSize: 2,
    maxTurns: 3,
    rolloutWorkers: 1,
    verifiers: 1,
  });
  assert.equal(summary.trajectories, 2);
  assert.equal(summary.checkpoints, 0, 'no learner runs for the llm policy');
  const [trajectories, verifications, deadLetters] = await Promise.all([readAll(context, 'trajectories'), readAll(context, 'verifications'), readAll(context, 'deadLetters')]);
  assert.deepEqual(deadLetters, []);
  assert.equal(trajectories.length, 2);
  assert.deepEqual(verifications.map((v) => v.trajectoryId).sort(), trajectories.map((t) => t.trajectoryId).sort());
  for (const trajectory of trajectories) {
    assert.equal(trajectory.policyId, LLM_POLICY);
    const turns = trajectory.steps.filter((step) => step.llm !== null);
    assert.ok(turns.length >= 1);
    for (const { llm: call } of turns) assert.equal(call!.logprobs!.length, call!.tokens!.completionIds.length);
    const samples = llmTrainingSamples(trajectory.steps);
    assert.equal(samples.length, 1);
    // The record stays compact: the prompt is never repeated per turn.
    const bytes = Buffer.byteLength(JSON.stringify(trajectory));
    console.log(`# llm trajectory: ${turns.length} model turns, ${samples[0]!.promptIds.length + samples[0]!.completionIds.length} tokens, ${bytes} bytes as JSON`);
  }
});
