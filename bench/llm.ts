/**
 * LLM rollout benchmark: `npm run bench:llm [-- --rounds 3 --tasks 1 --group-size 2 --max-turns 3 --max-tokens 48]`.
 *
 * Against the stack's model server (llama.cpp serving SmolLM2-135M-Instruct; `stack up --llm`, started here
 * when absent), --rounds rounds (at least 3), each of two sides in turn:
 *   1. the loop: `runLoop` with the llm policy over --tasks bundled tasks x --group-size episodes (the real
 *      rollout worker path: Kafka, sandboxes, the registry, the verifier and the sink running beside it);
 *      its rollout tokens per second are the completion tokens of the episodes over the span from the first
 *      episode's start to the last one's end;
 *   2. the bare server answering the same prompts: every model turn of the round's episodes sent again to
 *      `/completion` (the same prompt token ids, sampling parameters, seed and JSON-schema constraint), the
 *      episodes as many at a time as the loop ran them (in batches), each one's turns in order (so the server's prompt
 *      cache sees what it saw in the loop); tokens per second over that wall time.
 * Per model turn, the overhead of trialrun over the server: the step's time outside the sandbox (the
 * policy's template and tokenize calls, the completion, parsing, the environment's own work) minus the bare
 * server's time for the same request, and the part of it outside the model request (which the server's own
 * speed does not move); p50 and p95 over every turn of every round. Prints min / median / max
 * per side and the load average at each round.
 *
 * Then the gateway (`LlmGateway`, connectors/llm/gateway) against the bare server, on a llama.cpp server of the
 * bench's own (a free port: the stack's shared server, which a learning run may be using, is left alone), over
 * --gateway-rounds conversations of --gateway-turns calls of at most --max-tokens tokens: each call's messages go
 * to the gateway and to the server's own OpenAI endpoint (`/v1/chat/completions`, the same seed, temperature, top_p,
 * top-k and min-p off, so the same tokens are sampled), the order alternating call by call (so the prompt cache
 * favours neither side), the conversation going on with the gateway's reply. Per call: the gateway's time minus the
 * bare call's (its added latency), and the gateway's own work inside the call (its time minus the upstream
 * `/completion` request it made: the template, tokenize and HTTP hops), p50 and p95.
 * `--gateway-only` skips the loop part.
 */
import { join } from 'node:path';
import { loadavg } from 'node:os';
import '../envs/index.js';
import { repoRoot } from '../cli/paths.js';
import { LocalCheckpointStore } from '../connectors/checkpoints/index.js';
import { LlamaCppClient, LlmGateway } from '../connectors/llm/index.js';
import { DockerSandboxPool } from '../connectors/sandbox/index.js';
import { envToolSpecs, PROGRAM_REPAIR } from '../envs/index.js';
import { runLoop } from '../pipelines/loop/index.js';
import { LLM_POLICY, resolveLlmPolicyOptions, toolCallSchema } from '../policies/index.js';
import { STACK_LLM_URL, type Trajectory } from '../schemas/index.js';
import { freePort, imageFor, llmComponent, stackPaths, stackUp } from '../stack/index.js';
import { freshContext, readAll, tempDir } from '../test/integration/harness.js';
import { benchArgs, BenchReport } from './harness.js';

const cli = benchArgs(
  'bench:llm',
  [
    'npm run bench:llm [-- --rounds 3 --tasks 1 --group-size 2 --max-turns 3 --max-tokens 48]',
    'npm run bench:llm -- --gateway-only',
  ],
  {
    rounds: { type: 'string', default: '3' },
    tasks: { type: 'string', default: '1' },
    'group-size': { type: 'string', default: '2' },
    'max-turns': { type: 'string', default: '3' },
    'max-tokens': { type: 'string', default: '48' },
    'gateway-rounds': { type: 'string', default: '3' },
    'gateway-turns': { type: 'string', default: '4' },
    'gateway-only': { type: 'boolean', default: false },
  },
);
const { values } = cli;
const count = (name: 'rounds' | 'tasks' | 'group-size' | 'max-turns' | 'max-tokens' | 'gateway-rounds' | 'gateway-turns', min: number): number => cli.int(name, min);
const ROUNDS = count('rounds', 3);
const TASKS = count('tasks', 1);
const GROUP_SIZE = count('group-size', 1);
const MAX_TURNS = count('max-turns', 1);
const MAX_TOKENS = count('max-tokens', 1);
const GATEWAY_ROUNDS = count('gateway-rounds', 3);
const GATEWAY_TURNS = count('gateway-turns', 1);

const sorted = (xs: readonly number[]): number[] => [...xs].sort((a, b) => a - b);
const quantile = (xs: readonly number[], q: number): number => {
  const s = sorted(xs);
  const at = (s.length - 1) * q;
  const low = Math.floor(at);
  return s[low]! + (s[Math.min(low + 1, s.length - 1)]! - s[low]!) * (at - low);
};
const fmt = (n: number, digits = 1): string => n.toFixed(digits);
const spread = (xs: readonly number[], digits = 1): string => `${fmt(quantile(xs, 0.5), digits)} (${fmt(Math.min(...xs), digits)} to ${fmt(Math.max(...xs), digits)})`;
const log = (line: string): void => void process.stderr.write(`# ${line}\n`);

/** One model turn as the loop ran it: its whole prompt, sampling and timings. */
interface RecordedTurn {
  readonly promptIds: number[];
  readonly sampling: { temperature: number; topP: number; maxTokens: number; seed: number };
  readonly constrained: boolean;
  readonly completionTokens: number;
  /** The step's time outside the sandbox, and the model request's part of it. */
  readonly stepMs: number;
  readonly requestMs: number;
}

/** Each episode's model turns with their whole prompts, rebuilt from the appended ids (the prefix rule). */
function recordedTurns(trajectory: Trajectory): RecordedTurn[] {
  const turns: RecordedTurn[] = [];
  let ids: number[] = [];
  for (const step of trajectory.steps) {
    const llm = step.llm;
    if (!llm?.tokens || !llm.sampling || llm.sampling.seed === null) continue;
    const promptIds = llm.tokens.extendsPrevious ? [...ids, ...llm.tokens.appendedPromptIds] : [...llm.tokens.appendedPromptIds];
    if (promptIds.length !== llm.tokens.promptLength) throw new Error(`${trajectory.trajectoryId} step ${step.index}: the recorded prompt does not rebuild (${promptIds.length} of ${llm.tokens.promptLength} tokens)`);
    ids = [...promptIds, ...llm.tokens.completionIds];
    turns.push({
      promptIds,
      sampling: { ...llm.sampling, seed: llm.sampling.seed },
      constrained: llm.constrained,
      completionTokens: llm.tokens.completionIds.length,
      stepMs: step.durationMs - step.sandboxMs,
      requestMs: llm.latencyMs,
    });
  }
  return turns;
}

/** Questions a conversation asks in turn: short, so that replies are short too. */
const QUESTIONS = ['Name a fruit.', 'Why that one?', 'Name another.', 'Which is sweeter?', 'Say it in one word.', 'Thanks. Anything else?'];

async function chat(url: string, key: string | null, body: Record<string, unknown>): Promise<{ ms: number; content: string; completionTokens: number; gatewayMs: number | null }> {
  const started = performance.now();
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) }, body: JSON.stringify(body) });
  const answer = (await response.json()) as { choices?: Array<{ message: { content: string | null } }>; usage?: { completion_tokens: number } };
  const ms = performance.now() - started;
  if (!response.ok || !answer.choices) throw new Error(`${url}: HTTP ${response.status} ${JSON.stringify(answer).slice(0, 300)}`);
  const gatewayMs = response.headers.get('x-trialrun-gateway-ms');
  return { ms, content: answer.choices[0]!.message.content ?? '', completionTokens: answer.usage?.completion_tokens ?? 0, gatewayMs: gatewayMs === null ? null : Number(gatewayMs) };
}

/** The gateway's added latency per call against the bare server's own OpenAI endpoint (see the header). */
async function gatewayBench(): Promise<void> {
  // Its own results file (bench/results/llm-gateway.json): a gateway-only run leaves the loop's figures as they are.
  const report = new BenchReport('llm-gateway', `npm run bench:llm -- --gateway-only --gateway-rounds ${GATEWAY_ROUNDS} --gateway-turns ${GATEWAY_TURNS} --max-tokens ${MAX_TOKENS}`);
  const stateDir = tempDir('bench-llm-gateway-state');
  const url = `http://127.0.0.1:${await freePort()}/v1`;
  const serverOptions = { url, external: false, daemonName: 'llm-gateway-bench', paths: { stateDir, cacheDir: stackPaths().cacheDir }, parallel: 1, contextTokens: 2048 };
  await stackUp(log, [llmComponent(serverOptions)]);
  const gateway = await LlmGateway.start({ baseUrl: url });
  const added: number[] = [];
  const own: number[] = [];
  const gatewayCallMedians: number[] = [];
  const bareCallMedians: number[] = [];
  let calls = 0;
  let sameTokens = 0;
  try {
    for (let round = 0; round <= GATEWAY_ROUNDS; round++) {
      const route = gateway.open({ maxCalls: GATEWAY_TURNS });
      const messages: Array<{ role: string; content: string }> = [{ role: 'system', content: `You are assistant number ${round} (a fresh conversation).` }];
      const gatewayMs: number[] = [];
      const bareMs: number[] = [];
      for (let turn = 0; turn < GATEWAY_TURNS; turn++) {
        messages.push({ role: 'user', content: QUESTIONS[turn % QUESTIONS.length]! });
        const body = { messages, max_tokens: MAX_TOKENS, temperature: 0.7, top_p: 1, seed: 1000 * round + turn };
        const viaGateway = () => chat(`${route.baseUrl}/chat/completions`, route.apiKey, body);
        const bare = () => chat(`${url}/chat/completions`, null, { ...body, top_k: 0, min_p: 0 });
        // The order alternates call by call: whichever goes second may find more of its prompt in the server's cache.
        const [g, b] = (round + turn) % 2 === 0 ? [await viaGateway(), await bare()] : await bare().then(async (b) => [await viaGateway(), b] as const);
        messages.push({ role: 'assistant', content: g.content });
        if (round === 0) continue; // warm-up: the server's first calls load its caches
        calls++;
        if (g.completionTokens === b.completionTokens) sameTokens++;
        gatewayMs.push(g.ms);
        bareMs.push(b.ms);
        added.push(g.ms - b.ms);
        if (g.gatewayMs !== null) own.push(g.gatewayMs);
      }
      await route.close();
      if (round === 0) continue;
      gatewayCallMedians.push(quantile(gatewayMs, 0.5));
      bareCallMedians.push(quantile(bareMs, 0.5));
      log(`gateway round ${round}: call median ${fmt(gatewayCallMedians.at(-1)!, 0)} ms via the gateway, ${fmt(bareCallMedians.at(-1)!, 0)} ms bare; load ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
    }
  } finally {
    await gateway.stop();
    await llmComponent(serverOptions).stop(log);
  }
  console.log(`\ngateway: ${GATEWAY_ROUNDS} conversations of ${GATEWAY_TURNS} calls of at most ${MAX_TOKENS} tokens (${calls} calls; the same number of tokens on both sides in ${sameTokens}), on a llama.cpp server of the bench's own:`);
  console.log(`  added latency per call (gateway - bare server's /v1/chat/completions, same messages and seed), ms   p50 ${fmt(quantile(added, 0.5), 0)}  p95 ${fmt(quantile(added, 0.95), 0)}`);
  console.log(`  the gateway's own work in a call (its time - the /completion request it made), ms                 p50 ${fmt(quantile(own, 0.5), 1)}  p95 ${fmt(quantile(own, 0.95), 1)}`);
  report.compare({ metric: `OpenAI chat call, ${GATEWAY_TURNS}-call conversations of at most ${MAX_TOKENS} tokens a reply (median per round)`, unit: 'ms', ours: gatewayCallMedians, baseline: bareCallMedians, baselineName: 'bare llama.cpp /v1/chat/completions, same messages and seed', higherIsBetter: false });
  report.save();
}

async function main(): Promise<void> {
  if (values['gateway-only']) return gatewayBench();
  const report = new BenchReport('llm', `npm run bench:llm -- --rounds ${ROUNDS} --tasks ${TASKS} --group-size ${GROUP_SIZE} --max-turns ${MAX_TURNS} --max-tokens ${MAX_TOKENS}`);
  await stackUp(log);
  await stackUp(log, [llmComponent({ url: STACK_LLM_URL, external: false })]);
  const llm = resolveLlmPolicyOptions({ baseUrl: STACK_LLM_URL, maxTokensPerTurn: MAX_TOKENS }, {});
  const server = new LlamaCppClient({ rootUrl: STACK_LLM_URL.replace(/\/v1$/, '') });
  const schema = toolCallSchema(envToolSpecs(PROGRAM_REPAIR));
  const pool = new DockerSandboxPool();
  const loopRates: number[] = [];
  const bareRates: number[] = [];
  const overheads: number[] = [];
  const requestOverheads: number[] = [];
  const outsideRequest: number[] = [];
  const loads: string[] = [];
  let turnsTotal = 0;
  let sameTokens = 0;
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      loads.push(loadavg().map((x) => x.toFixed(1)).join(' '));
      const context = await freshContext(`bench-llm-${round}`);
      const summary = await runLoop(context, {
        taskFile: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'),
        limitTasks: TASKS,
        dataDir: tempDir('bench-llm'),
        pool,
        imageFor,
        checkpoints: new LocalCheckpointStore(tempDir('bench-llm-checkpoints')),
        policyId: LLM_POLICY,
        llm,
        groupSize: GROUP_SIZE,
        maxTurns: MAX_TURNS,
        rolloutWorkers: 1,
        verifiers: 1,
      });
      const trajectories = (await readAll(context, 'trajectories')).filter((t) => t.lineage.runId === summary.runId);
      const ends = trajectories.map((t) => Date.parse(t.lineage.createdAt));
      const span = Math.max(...ends) - Math.min(...trajectories.map((t, i) => ends[i]! - t.totalMs));
      const episodes = trajectories.map(recordedTurns);
      const loopTokens = episodes.flat().reduce((sum, turn) => sum + turn.completionTokens, 0);
      loopRates.push((loopTokens / span) * 1000);

      let bareTokens = 0;
      const started = performance.now();
      // As many episodes at once as the loop ran (the server's two slots), each one's turns in order.
      const replay = async (turns: readonly RecordedTurn[]): Promise<void> => {
        for (const turn of turns) {
          const answer = await server.complete({ promptIds: turn.promptIds, sampling: turn.sampling, jsonSchema: turn.constrained ? schema : undefined });
          bareTokens += answer.completionIds.length;
          if (answer.completionIds.length === turn.completionTokens) sameTokens++;
          overheads.push(turn.stepMs - answer.latencyMs);
          requestOverheads.push(turn.requestMs - answer.latencyMs);
          outsideRequest.push(turn.stepMs - turn.requestMs);
          turnsTotal++;
        }
      };
      for (let first = 0; first < episodes.length; first += llm.concurrentEpisodes) await Promise.all(episodes.slice(first, first + llm.concurrentEpisodes).map(replay));
      const bareMs = performance.now() - started;
      bareRates.push((bareTokens / bareMs) * 1000);
      log(`round ${round}: loop ${trajectories.length} episodes, ${loopTokens} completion tokens in ${fmt(span / 1000)} s (${fmt(loopRates.at(-1)!)} tokens/s); bare ${bareTokens} tokens in ${fmt(bareMs / 1000)} s (${fmt(bareRates.at(-1)!)} tokens/s); load ${loads.at(-1)}`);
    }
  } finally {
    await pool.close();
  }
  console.log(`\nllm rollouts: ${ROUNDS} rounds of ${TASKS} task(s) x ${GROUP_SIZE} episodes, at most ${MAX_TURNS} turns of ${MAX_TOKENS} tokens, ${llm.concurrentEpisodes} episodes at once; load average per round: ${loads.join(' | ')}`);
  console.log(`completion tokens/s, median (min to max):`);
  console.log(`  through the loop (rollout worker, sandboxes, Kafka; verifier and sink beside it)  ${spread(loopRates)}`);
  console.log(`  bare server, the same prompts                                                    ${spread(bareRates)}`);
  console.log(`  loop / bare                                                                      ${fmt(quantile(loopRates, 0.5) / quantile(bareRates, 0.5), 2)}`);
  console.log(`per model turn (${turnsTotal} turns; the bare reply had as many tokens as the loop's in ${sameTokens}):`);
  console.log(`  overhead of trialrun over the server (step outside the sandbox - bare request), ms  p50 ${fmt(quantile(overheads, 0.5), 0)}  p95 ${fmt(quantile(overheads, 0.95), 0)}`);
  console.log(`  of which in the model request itself (loop request - bare request), ms              p50 ${fmt(quantile(requestOverheads, 0.5), 0)}  p95 ${fmt(quantile(requestOverheads, 0.95), 0)}`);
  // Not the server's: the policy's template and tokenize calls, reply parsing, the environment's own work.
  console.log(`  outside the model request (step outside the sandbox - loop request), ms            p50 ${fmt(quantile(outsideRequest, 0.5), 0)}  p95 ${fmt(quantile(outsideRequest, 0.95), 0)}`);
  report.compare({ metric: `llm rollouts, ${TASKS} task(s) x ${GROUP_SIZE} episodes a round`, unit: 'completion tokens/s', ours: loopRates, baseline: bareRates, baselineName: 'bare llama.cpp server, same token prompts', higherIsBetter: true });
  report.save();
  await gatewayBench();
}

await main();
