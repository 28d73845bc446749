import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { repoRoot } from '../../cli/paths.js';
import { LlamaCppClient, LlmGateway } from '../../connectors/llm/index.js';
import { AGENT_COMMAND, AGENT_TURN } from '../../envs/index.js';
import { runEpisode } from '../../pipelines/rollout-worker/index.js';
import { seededRandom, type Policy } from '../../policies/index.js';
import { STACK_LLM_PORT, STACK_LLM_URL, type Task } from '../../schemas/index.js';
import { imageFor, llmComponent, stackUp } from '../../stack/index.js';
import { ensureStack } from './harness.js';
import { BACKENDS } from './sandbox-backends.js';
import { workspaceMiniTasks } from './workspace-fixtures.js';

/**
 * agent-command/v1 with a program of our own (test/integration/python/gateway_probe.py) in a Docker sandbox, its
 * model the stack's llama.cpp behind the gateway: what the program can reach (its own route, nothing else), and how
 * its model calls become the episode's steps. The isolation test runs on both sandbox backends.
 */
const pools = BACKENDS.map((backend) => ({ name: backend.name, pool: backend.pool({ warmSize: 0 }) }));
const pool = pools[0]!.pool;
let gateway: LlmGateway;
let server: LlamaCppClient;
let task: Task;
/** The probe, in the workspace beside the task's files. */
const probe = readFileSync(join(repoRoot(), 'test', 'integration', 'python', 'gateway_probe.py'), 'utf8');

before(async () => {
  await ensureStack();
  await stackUp((line) => console.log(`# ${line}`), [llmComponent({ url: STACK_LLM_URL, external: false })]);
  gateway = await LlmGateway.start({ baseUrl: STACK_LLM_URL });
  server = new LlamaCppClient({ rootUrl: STACK_LLM_URL.replace(/\/v1$/, '') });
  const [first] = await workspaceMiniTasks();
  task = { ...first!, files: { ...first!.files, 'gateway_probe.py': probe } };
}, { timeout: 900_000 });
after(async () => {
  await gateway?.stop();
  for (const { pool: each } of pools) await each.close();
});

/** No policy acts in this environment: one that is asked fails the test. */
const noPolicy: Policy<unknown> = { policyId: 'llm', version: 0, act: () => Promise.reject(new Error('a policy was asked to act in agent-command/v1')) };

const hostAddresses = (): string[] => ['127.0.0.1', ...Object.values(networkInterfaces()).flatMap((list) => (list ?? []).filter((a) => a.family === 'IPv4' && !a.internal).map((a) => a.address))];

for (const { name, pool: backendPool } of pools) {
  test(`${name} sandboxes: the program reaches its own gateway route and nothing else, not the host, not another episode's route`, { timeout: 600_000 }, async () => {
    const other = gateway.open();
    const gatewayPort = Number(new URL(gateway.url).port);
    const command = `OTHER_ROUTE_PATH=${new URL(other.baseUrl).pathname} HOST_ADDRESSES=${hostAddresses().join(',')} HOST_PORTS=${STACK_LLM_PORT},${gatewayPort},9092 python3 gateway_probe.py isolation`;
    const env = AGENT_COMMAND.create({ pool: backendPool, runId: 'agent-command-it', imageFor, maxTurns: 8, agentProgram: { command, gateway } });
    const episode = await runEpisode(AGENT_COMMAND, env, () => env.init(task), noPolicy, seededRandom('isolation'), new AbortController().signal);
    assert.equal(await other.close().then((calls) => calls.length), 0, 'the other route saw no call');
    const last = episode.steps.at(-1)!;
    assert.equal(episode.outcome, 'submitted', 'the program ended the episode by exiting');
    assert.equal(last.toolResult.exitCode, 0, last.toolResult.output);
    const reached = JSON.parse(last.toolResult.output.split('\n')[0]!) as Record<string, unknown>;
    assert.equal(reached.models, 200);
    assert.equal(reached.chat, 200);
    assert.equal(reached.other_route_with_own_key, 401, 'another episode\'s route refuses this episode\'s key');
    assert.equal(reached.no_key, 401);
    const tcp = Object.entries(reached).filter(([name]) => name.startsWith('tcp '));
    assert.ok(tcp.length >= 3);
    for (const [name, outcome] of tcp) assert.notEqual(outcome, 'connected', `${name} must be unreachable from the sandbox`);
    assert.notEqual(reached.dns, 'resolved');
    // The one chat call is the episode's one step, token-exact: its completion detokenises to what the program received.
    assert.deepEqual(episode.steps.map((step) => step.toolCall.name), [AGENT_TURN]);
    const llm = last.llm!;
    assert.ok(llm.tokens && llm.tokens.completionIds.length > 0 && llm.logprobs?.length === llm.tokens.completionIds.length);
    assert.equal(await server.detokenize(llm.tokens.completionIds.slice(0, llm.finishReason === 'stop' ? -1 : undefined)), llm.content);
  });
}

test('each model call is a step whose result is what the program sent next; its calls, capped at the turn cap, spent, the program is stopped, truncated', { timeout: 600_000 }, async () => {
  const env = AGENT_COMMAND.create({ pool, runId: 'agent-command-it', imageFor, maxTurns: 2, agentProgram: { command: 'python3 gateway_probe.py calls 5 && echo written > after.txt', gateway } });
  const episode = await runEpisode(AGENT_COMMAND, env, () => env.init(task), noPolicy, seededRandom('cap'), new AbortController().signal);
  assert.equal(episode.outcome, 'max-turns');
  assert.equal(episode.steps.length, 2);
  assert.ok(episode.steps.every((step) => step.llm?.tokens !== null && step.llm?.tokens !== undefined));
  assert.equal(episode.steps[0]!.toolResult.output, 'Count to 1.', 'the first call\'s result is the next call\'s new message');
  assert.equal(episode.steps[1]!.toolResult.ok, false);
  assert.match(episode.steps[1]!.toolResult.output, /its calls \(2\)/);
  assert.equal(Object.hasOwn(episode.finalFiles, 'after.txt'), false, 'the program was stopped before it finished');
  assert.equal(episode.finalFiles['gateway_probe.py'], probe);
});
