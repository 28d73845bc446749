/**
 * Records a trace for bench:loop --trace: `node dist/bench/record-trace.js --out bench/traces/<name>.jsonl
 * [--tasks 6 --group-size 4 --max-turns 5 --max-tokens 96]`.
 *
 * A real run of the llm policy through the loop (`runLoop`: Kafka, sandboxes, the verifier and the analytics sink)
 * against the stack's model server, over the first --tasks bundled repair tasks, --group-size episodes each; then
 * the turns of its episodes are read back from the run's analytics store (readStoreTrace, the same reader as
 * `--trace store`) and written as a trace file whose header says where and how it was recorded.
 */
import { loadavg, cpus } from 'node:os';
import { join } from 'node:path';
import '../envs/index.js';
import { repoRoot } from '../cli/paths.js';
import { LocalCheckpointStore } from '../connectors/checkpoints/index.js';
import { DockerSandboxPool } from '../connectors/sandbox/index.js';
import { runLoop } from '../pipelines/loop/index.js';
import { LLM_POLICY, resolveLlmPolicyOptions } from '../policies/index.js';
import { STACK_LLM_URL } from '../schemas/index.js';
import { imageFor, llmComponent, stackUp } from '../stack/index.js';
import { freshContext, tempDir } from '../test/integration/harness.js';
import { readStoreTrace, traceShape, writeTrace } from './trace.js';
import { benchArgs } from './harness.js';

const cli = benchArgs(
  'record-trace',
  'node dist/bench/record-trace.js --out bench/traces/<name>.jsonl [--tasks 6 --group-size 4 --max-turns 5 --max-tokens 96]',
  {
    out: { type: 'string' },
    tasks: { type: 'string', default: '6' },
    'group-size': { type: 'string', default: '4' },
    'max-turns': { type: 'string', default: '5' },
    'max-tokens': { type: 'string', default: '96' },
  },
);
const { values } = cli;
if (!values.out) cli.fail('--out <file> is required: where the trace goes');
const TASKS = cli.int('tasks');
const GROUP = cli.int('group-size');
const MAX_TURNS = cli.int('max-turns');
const MAX_TOKENS = cli.int('max-tokens');
const log = (line: string): void => void process.stderr.write(`# ${line}\n`);

async function main(): Promise<void> {
  await stackUp(log);
  await stackUp(log, [llmComponent({ url: STACK_LLM_URL, external: false })]);
  const llm = resolveLlmPolicyOptions({ baseUrl: STACK_LLM_URL, maxTokensPerTurn: MAX_TOKENS }, {});
  const pool = new DockerSandboxPool();
  const data = tempDir('record-trace');
  const loadBefore = loadavg()[0]!;
  const started = new Date();
  try {
    const context = await freshContext('record-trace');
    const summary = await runLoop(context, {
      taskFile: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'),
      limitTasks: TASKS,
      dataDir: data,
      pool,
      imageFor,
      checkpoints: new LocalCheckpointStore(tempDir('record-trace-checkpoints')),
      policyId: LLM_POLICY,
      llm,
      groupSize: GROUP,
      maxTurns: MAX_TURNS,
      rolloutWorkers: 1,
      verifiers: 1,
    });
    const trace = await readStoreTrace(data);
    const shape = traceShape(trace);
    writeTrace(values.out!, {
      header: [
        `Recorded ${started.toISOString()} by bench/record-trace.ts: node dist/bench/record-trace.js --out ${values.out} --tasks ${TASKS} --group-size ${GROUP} --max-turns ${MAX_TURNS} --max-tokens ${MAX_TOKENS}`,
        `A real run of the llm policy through runLoop (run ${summary.runId}): the stack's llama.cpp server (${llm.model ?? 'its model'}, ${llm.concurrentEpisodes} episodes at once), ${TASKS} bundled repair tasks x ${GROUP} episodes, at most ${MAX_TURNS} turns of ${MAX_TOKENS} tokens;`,
        `read back from that run's analytics store (trajectories.llm_turns: latency_ms, completion_tokens). Machine: ${cpus().length} cores, load ${loadBefore.toFixed(1)} -> ${loadavg()[0]!.toFixed(1)} (shared with other work).`,
        `${shape.episodes} episodes, ${shape.turns.mean.toFixed(1)} turns on average; model time per episode mean ${shape.waitS.mean.toFixed(1)} s, p50 ${shape.waitS.p50.toFixed(1)} s, p90 ${shape.waitS.p90.toFixed(1)} s, max ${shape.waitS.max.toFixed(1)} s.`,
        'Each line: {"id": trajectory id, "turns": [[latency ms, reply tokens], ...]} in step order.',
      ],
      episodes: trace.episodes,
    });
    log(`${trace.episodes.length} episodes written to ${values.out}; model time per episode mean ${shape.waitS.mean.toFixed(1)} s, max ${shape.waitS.max.toFixed(1)} s`);
  } finally {
    await pool.close();
  }
}

await main();
