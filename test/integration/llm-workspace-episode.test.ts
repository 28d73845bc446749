import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { WORKSPACE, WORKSPACE_TOOL_DEFS } from '../../envs/index.js';
import { runEpisode } from '../../pipelines/rollout-worker/index.js';
import { INVALID_REPLY, LlmPolicy, resolveLlmPolicyOptions, seededRandom, type LlmEpisode, type Policy } from '../../policies/index.js';
import { STACK_LLM_URL, type Task } from '../../schemas/index.js';
import { imageFor, llmComponent, stackUp } from '../../stack/index.js';
import { ensureStack } from './harness.js';
import { workspaceMiniTasks } from './workspace-fixtures.js';

/** The llm policy on workspace/v1 against the stack's llama.cpp: its tools and prompt come from the workspace spec. */
const pool = new DockerSandboxPool();
let task: Task;
before(async () => {
  await ensureStack();
  await stackUp((line) => console.log(`# ${line}`), [llmComponent({ url: STACK_LLM_URL, external: false })]);
  task = (await workspaceMiniTasks())[0]!;
}, { timeout: 900_000 });
after(() => pool.close());

test('an llm episode on a workspace task calls only the workspace tools and ends with the whole tree', { timeout: 900_000 }, async () => {
  const policy = new LlmPolicy(resolveLlmPolicyOptions({ baseUrl: STACK_LLM_URL, server: 'llama.cpp', maxTokensPerTurn: 64 }, {}), 0);
  let actor: LlmEpisode | null = null;
  const watched: Policy<unknown> = { policyId: policy.policyId, version: 0, act: () => Promise.reject(new Error('unused')), startEpisode: (env) => (actor = policy.startEpisode(env)) };
  const env = WORKSPACE.create({ pool, runId: 'llm-ws', imageFor, maxTurns: 3 });
  const episode = await runEpisode(WORKSPACE, env, () => env.init(task), watched, seededRandom('llm-ws'), new AbortController().signal);
  const [system, opening] = actor!.transcript();
  for (const def of WORKSPACE_TOOL_DEFS) assert.ok(system!.content.includes(`"name": "${def.name}"`), `the system prompt lists ${def.name}`);
  assert.doesNotMatch(system!.content, /list_edits|apply_edit/, 'no program-repair tool');
  assert.match(opening!.content, /The workspace holds \d+ files:\ninventory\/__init__\.py/);
  const allowed = new Set<string>([...WORKSPACE_TOOL_DEFS.map((def) => def.name), INVALID_REPLY]);
  for (const step of episode.steps) assert.ok(allowed.has(step.toolCall.name), step.toolCall.name);
  assert.ok(episode.steps.length >= 1 && episode.steps.length <= 4);
  for (const path of Object.keys(task.files)) assert.ok(Object.hasOwn(episode.finalFiles, path) || episode.steps.some((step) => step.toolCall.name === 'bash'), `${path} is in the final tree`);
});
