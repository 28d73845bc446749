import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { llmLearnerLaunch, llmLearnerProcess, servedGguf } from '../../cli/llm-learner.js';
import { LocalCheckpointStore } from '../../connectors/checkpoints/index.js';
import { LlamaCppClient, LlmGateway } from '../../connectors/llm/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { AGENT_COMMAND_ENV, AGENT_TURN, WORKSPACE } from '../../envs/index.js';
import { committedPastInputs, runLoop, type LoopSummary } from '../../pipelines/loop/index.js';
import { runEpisode } from '../../pipelines/rollout-worker/index.js';
import type { ProcessorContext } from '../../pipelines/runtime/index.js';
import { LLM_POLICY, LlmPolicy, resolveLlmPolicyOptions, seededRandom, type Policy } from '../../policies/index.js';
import { llmTrainingSamples, STACK_LLM_URL, Trajectory, type LlmCall, type Reward, type Step, type Task, type Verification } from '../../schemas/index.js';
import { imageFor, llmComponent, llmLearnerPython, stackUp } from '../../stack/index.js';
import { ensureStack, freshContext, readAll, tempDir } from './harness.js';
import { workspaceMiniTasks } from './workspace-fixtures.js';

/**
 * mini-swe-agent (the PyPI harness, unchanged, in the mini-swe-agent image) in the loop: one workspace-mini task
 * in agent-command/v1, two episodes, its model the stack's SmolLM2 on llama.cpp behind the gateway, the Python
 * LLM learner consuming the topics. It need not solve the task; its turns must land token-exact, its
 * trajectories and rewards must reach the learner, and its records must have the built-in llm policy's shape.
 */
const pool = new DockerSandboxPool({ warmSize: 0 });
const llm = resolveLlmPolicyOptions({ baseUrl: STACK_LLM_URL, server: 'llama.cpp', maxTokensPerTurn: 128 }, {});
let gateway: LlmGateway;
let server: LlamaCppClient;
let context: ProcessorContext;
let summary: LoopSummary;
let learnerGroup: string;
let trajectories: Trajectory[];
let verifications: Verification[];
let rewards: Reward[];
let workspaceTask: Task;

before(async () => {
  await ensureStack();
  await stackUp((line) => console.log(`# ${line}`), [llmComponent({ url: STACK_LLM_URL, external: false })]);
  const python = await llmLearnerPython((line) => console.log(`# ${line}`), { logFile: join(tempDir('mswea-learner'), 'venv.log') });
  gateway = await LlmGateway.start({ baseUrl: STACK_LLM_URL, defaultMaxTokens: llm.maxTokensPerTurn });
  server = new LlamaCppClient({ rootUrl: STACK_LLM_URL.replace(/\/v1$/, '') });
  workspaceTask = (await workspaceMiniTasks())[0]!;
  context = await freshContext('mini-swe-agent');
  const runId = 'mini-swe-agent-it';
  const checkpoints = tempDir('mswea-ckpt');
  const env = { ...process.env, TRIALRUN_TOPIC_PREFIX: context.names.prefix, TRIALRUN_CHECKPOINTS: checkpoints };
  const gguf = await servedGguf(STACK_LLM_URL.replace(/\/v1$/, ''));
  const learner = llmLearnerProcess(python, llmLearnerLaunch({ gguf, runId, batchSize: 2, sessionTimeoutMs: 10_000, extraArgs: ['--threads', '2'] }, env), join(tempDir('mswea-learner-log'), 'learner.log'));
  learnerGroup = learner.groupId;
  summary = await runLoop(context, {
    tasks: [{ ...workspaceTask, envId: AGENT_COMMAND_ENV, image: 'mini-swe-agent' }],
    agentProgram: { command: 'run-mini-swe-agent', gateway },
    externalLearner: learner,
    dataDir: tempDir('mswea-data'),
    pool,
    imageFor,
    checkpoints: new LocalCheckpointStore(checkpoints),
    policyId: LLM_POLICY,
    llm,
    runId,
    groupSize: 2,
    batchSize: 2,
    maxTurns: 4,
    rolloutWorkers: 1,
    verifiers: 1,
    referenceRuns: 0,
  });
  [trajectories, verifications, rewards] = await Promise.all([readAll(context, 'trajectories'), readAll(context, 'verifications'), readAll(context, 'rewards')]);
}, { timeout: 1_800_000 });
after(async () => {
  await gateway?.stop();
  await pool.close();
});

const turnsOf = (t: Trajectory): Array<Step & { llm: LlmCall }> => t.steps.filter((s): s is Step & { llm: LlmCall } => s.llm !== null);

test('every mini-swe-agent turn is token-exact: its sampled ids detokenise to what the harness received', { timeout: 300_000 }, async () => {
  const turns = trajectories.flatMap(turnsOf);
  const drifted = turns.filter((s) => s.llm.tokens?.drift);
  const samples = trajectories.flatMap((t) => llmTrainingSamples(t.steps));
  console.log(`# ${trajectories.length} trajectories (${trajectories.map((t) => `${t.outcome}, ${t.steps.length} steps`).join('; ')}), ${turns.length} model turns, ${samples.length} training samples, ${samples.reduce((n, s) => n + s.completionMask.filter(Boolean).length, 0)} sampled tokens`);
  console.log(`# drift: ${drifted.length} of ${turns.length} turns (${drifted.map((s) => `${s.llm.tokens!.drift!.matchingTokens}/${s.llm.tokens!.drift!.previousTokens}`).join(', ')} tokens matching)`);
  console.log(`# rewards ${rewards.map((r) => r.reward.toFixed(2)).join(' ')}, verifications passed ${verifications.filter((v) => v.passed).length}/${verifications.length}`);
  assert.ok(turns.length >= 2, 'mini-swe-agent called the model in each episode');
  for (const { llm: call } of turns) {
    const ids = call.tokens!.completionIds;
    assert.equal(call.logprobs?.length, ids.length);
    assert.equal(await server.detokenize(call.finishReason === 'stop' ? ids.slice(0, -1) : ids), call.content);
  }
  assert.ok(samples.length >= trajectories.length, 'at least one training sample per episode');
});

test('its trajectories and rewards reach the topics the LLM learner reads, and the learner consumes them all', { timeout: 300_000 }, async () => {
  assert.equal(summary.deadLetters, 0);
  assert.equal(trajectories.length, 2);
  assert.equal(verifications.length, 2);
  assert.equal(rewards.length, 2);
  for (const t of trajectories) {
    assert.equal(t.envId, AGENT_COMMAND_ENV);
    assert.equal(t.policyId, LLM_POLICY);
    assert.ok(t.steps.every((s) => s.toolCall.name === AGENT_TURN));
  }
  assert.ok(await committedPastInputs(context, learnerGroup), 'the learner committed past every trajectory and reward');
});

test('its records have the built-in llm policy\'s shape: the same step and model-call fields, set alike', { timeout: 600_000 }, async () => {
  const policy = new LlmPolicy(llm, 0);
  const builtIn: Policy<unknown> = { policyId: LLM_POLICY, version: 0, act: () => Promise.reject(new Error('unused')), startEpisode: (spec) => policy.startEpisode(spec) };
  const env = WORKSPACE.create({ pool, runId: 'mswea-shape', imageFor, maxTurns: 2 });
  const episode = await runEpisode(WORKSPACE, env, () => env.init(workspaceTask), builtIn, seededRandom('shape'), new AbortController().signal);
  const reference = episode.steps.find((s) => s.llm !== null)!;
  // Which fields are present and which hold a value (not null), for a step and for its model call.
  const shape = (value: object): string[] => Object.entries(value).map(([key, v]) => `${key}:${v === null ? 'null' : 'set'}`).sort();
  for (const step of trajectories.flatMap(turnsOf)) {
    assert.deepEqual(Object.keys(step).sort(), Object.keys(reference).sort());
    // `constrained` and `invalidReply` are the built-in policy's own (it constrains decoding to its tools); a harness's calls are neither.
    assert.deepEqual(shape(step.llm), shape(reference.llm!));
    assert.deepEqual(Object.keys(step.llm.tokens!).filter((k) => k !== 'drift').sort(), Object.keys(reference.llm!.tokens!).filter((k) => k !== 'drift').sort());
    assert.deepEqual(Object.keys(step.llm.sampling!).sort(), Object.keys(reference.llm!.sampling!).sort());
  }
});
