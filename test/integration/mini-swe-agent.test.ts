import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { LlamaCppClient, LlmGateway } from '../../connectors/llm/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { AGENT_COMMAND, AGENT_TURN } from '../../envs/index.js';
import { runEpisode } from '../../pipelines/rollout-worker/index.js';
import { seededRandom, type Policy } from '../../policies/index.js';
import { llmTrainingSamples, STACK_LLM_URL, Step, type Task } from '../../schemas/index.js';
import { imageFor, llmComponent, stackUp } from '../../stack/index.js';
import { ensureStack } from './harness.js';
import { workspaceMiniTasks } from './workspace-fixtures.js';

/**
 * mini-swe-agent (the PyPI harness, unchanged, in the mini-swe-agent image) on a bundled workspace task, its model
 * the stack's SmolLM2 on llama.cpp through the gateway. It need not solve the task; its turns must land token-exact.
 */
const pool = new DockerSandboxPool({ warmSize: 0 });
let gateway: LlmGateway;
let server: LlamaCppClient;
let task: Task;

before(async () => {
  await ensureStack();
  await stackUp((line) => console.log(`# ${line}`), [llmComponent({ url: STACK_LLM_URL, external: false })]);
  gateway = await LlmGateway.start({ baseUrl: STACK_LLM_URL, defaultMaxTokens: 128 });
  server = new LlamaCppClient({ rootUrl: STACK_LLM_URL.replace(/\/v1$/, '') });
  const [first] = await workspaceMiniTasks();
  task = { ...first!, image: 'mini-swe-agent' };
}, { timeout: 900_000 });
after(async () => {
  await gateway?.stop();
  await pool.close();
});

const noPolicy: Policy<unknown> = { policyId: 'llm', version: 0, act: () => Promise.reject(new Error('a policy was asked to act in agent-command/v1')) };

test('mini-swe-agent through the gateway: every turn token-exact, the records the built-in policy\'s shape', { timeout: 900_000 }, async () => {
  const env = AGENT_COMMAND.create({ pool, runId: 'mini-swe-agent-it', imageFor, maxTurns: 4, agentProgram: { command: 'run-mini-swe-agent', gateway } });
  const episode = await runEpisode(AGENT_COMMAND, env, () => env.init(task), noPolicy, seededRandom('mini'), new AbortController().signal);
  console.log(`# outcome ${episode.outcome}, ${episode.steps.length} steps; last result: ${episode.steps.at(-1)?.toolResult.output.slice(-800)}`);
  const turns = episode.steps.filter((step) => step.llm !== null);
  assert.ok(turns.length >= 1, 'mini-swe-agent called the model');
  for (const step of episode.steps) {
    Step.parse(step);
    assert.equal(step.toolCall.name, AGENT_TURN);
  }
  let drifted = 0;
  for (const { llm } of turns) {
    const tokens = llm!.tokens!;
    assert.equal(llm!.logprobs?.length, tokens.completionIds.length);
    const text = await server.detokenize(tokens.completionIds.slice(0, llm!.finishReason === 'stop' ? -1 : undefined));
    assert.equal(text, llm!.content, 'the sampled ids detokenise to what mini-swe-agent received');
    if (tokens.drift) drifted++;
  }
  const samples = llmTrainingSamples(episode.steps);
  assert.ok(samples.length >= 1);
  console.log(`# ${turns.length} model turns, ${samples.length} training samples, ${drifted} drifted turns, ${samples.reduce((n, s) => n + s.completionMask.filter(Boolean).length, 0)} sampled tokens`);
  assert.ok(Object.keys(episode.finalFiles).length >= Object.keys(task.files).length - 1);
});
