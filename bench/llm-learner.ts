/**
 * LLM learner benchmark: `npm run bench:llm-learner [-- --batch 2 --max-tokens 32 --threads 2 --rounds 3]` (replies of
 * --max-tokens words).
 *
 * Update tokens per second (sampled tokens trained on, per second) of the Python LLM learner end to end — the
 * batch's trajectories and rewards produced to Kafka, consumed, decoded, joined, the update, the artifact and
 * optimizer state written, the checkpoint committed with the offsets, until a reader sees the checkpoint —
 * against the bare PyTorch step (llm-learner/trialrun_llm_learner/bare_step.py: the same Trainer.update on the
 * same batch, no Kafka), both in processes that loaded the model beforehand, rounds interleaved
 * (bench/harness.ts). Needs the stack and its model server (`stack up --llm` runs first).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { llmLearnerArgs, llmLearnerLaunch, llmLearnerVenv, llmServerRoot, servedGguf } from '../cli/llm-learner.js';
import { repoRoot } from '../cli/paths.js';
import { stackComponents, stackUp } from '../stack/index.js';
import { freshContext, readAll, tempDir } from '../test/integration/harness.js';
import { llmSamplePair, sendPairs, tokenizedTurns } from '../test/integration/llm-learner-fixtures.js';
import { benchArgs, BenchReport, interleave } from './harness.js';

const cli = benchArgs(
  'bench:llm-learner',
  'npm run bench:llm-learner [-- --batch 2 --max-tokens 32 --threads 2 --rounds 3]',
  {
    batch: { type: 'string', default: '2' },
    'max-tokens': { type: 'string', default: '32' },
    threads: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '3' },
  },
);
const { values: args } = cli;
const wholeNumber = (name: keyof typeof args, min: number): number => cli.int(name, min);
const BATCH = wholeNumber('batch', 1);
const MAX_TOKENS = wholeNumber('max-tokens', 1);
const THREADS = wholeNumber('threads', 1);
const ROUNDS = wholeNumber('rounds', 3);
const report = new BenchReport('llm-learner', `npm run bench:llm-learner -- --batch ${BATCH} --max-tokens ${MAX_TOKENS} --threads ${THREADS} --rounds ${ROUNDS}`);
const log = (line: string): void => void process.stderr.write(`# ${line}\n`);

await stackUp(log, stackComponents({ llm: true }));
const python = await llmLearnerVenv();
const gguf = await servedGguf(llmServerRoot());
// Replies of MAX_TOKENS words (about as many tokens) to one prompt, as the served model's token ids.
const words = 'the sea is calm and blue under a wide sky while small boats drift past the old stone harbour wall at dawn'.split(' ');
const replies = Array.from({ length: BATCH }, (_, i) => Array.from({ length: MAX_TOKENS }, (_, w) => words[(i + w) % words.length]).join(' '));
const turns = await tokenizedTurns(llmServerRoot(), replies, { content: 'Write one sentence about the sea.' });
const context = await freshContext('bench-llm-learner');
const folder = join(repoRoot(), 'llm-learner');
const env = { ...process.env, TRIALRUN_TOPIC_PREFIX: context.names.prefix, TRIALRUN_CHECKPOINTS: tempDir('bench-llm-learner') };
const learnerFlags = ['--threads', String(THREADS), '--max-sequence-tokens', '4096'];
const pythonEnv = { ...env, PYTHONPATH: folder, PYTHONUNBUFFERED: '1' };

/** Resolves with the first line of the child's output that `match` accepts. */
function lineFrom(child: ChildProcess, stream: 'stdout' | 'stderr', match: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child[stream]! });
    const onExit = (code: number | null): void => reject(new Error(`the ${stream === 'stdout' ? 'bare step' : 'learner'} exited (${code}) before saying ${match}`));
    child.once('exit', onExit);
    lines.on('line', (line) => {
      if (stream === 'stderr') log(`learner: ${line}`);
      if (!match.test(line)) return;
      child.off('exit', onExit);
      lines.removeAllListeners('line');
      if (stream === 'stderr') lines.on('line', (later) => log(`learner: ${later}`));
      resolve(line);
    });
  });
}

// The learner, loaded and waiting on fresh topics.
const learner = spawn(python, llmLearnerArgs(llmLearnerLaunch({ gguf, runId: 'bench-llm-learner', batchSize: BATCH, sessionTimeoutMs: 10_000, extraArgs: learnerFlags }, env)), { cwd: folder, env: pythonEnv, stdio: ['ignore', 'ignore', 'pipe'] });
await lineFrom(learner, 'stderr', /running on/);
// The bare step, loaded with the same batch.
const batchFile = join(tempDir('bench-llm-batch'), 'batch.json');
writeFileSync(batchFile, JSON.stringify(Array.from({ length: BATCH }, (_, i) => llmSamplePair(turns, i, { runId: 'bench-llm-learner' }))));
const bare = spawn(python, ['-m', 'trialrun_llm_learner.bare_step', '--gguf', gguf, '--batch', batchFile, ...learnerFlags], { cwd: folder, env: pythonEnv, stdio: ['pipe', 'pipe', 'inherit'] });
await lineFrom(bare, 'stdout', /^ready$/);

let round = 0;
const updateSeconds: number[] = [];
try {
  const values = await interleave(
    {
      learner: async () => {
        round++;
        const pairs = Array.from({ length: BATCH }, (_, i) => llmSamplePair(turns, i, { id: `${round}-${i}`, runId: 'bench-llm-learner' }));
        const started = performance.now();
        await sendPairs(context, pairs);
        for (;;) {
          const checkpoints = await readAll(context, 'policyCheckpoints');
          if (checkpoints.length >= round) {
            const newest = checkpoints[round - 1]!;
            updateSeconds.push(newest.metrics.extra.updateSeconds ?? 0);
            return newest.metrics.extra.tokens! / ((performance.now() - started) / 1000);
          }
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      },
      bare: async () => {
        const answer = lineFrom(bare, 'stdout', /^\{/);
        bare.stdin!.write('step\n');
        const { tokens, seconds } = JSON.parse(await answer) as { tokens: number; seconds: number };
        return tokens / seconds;
      },
    },
    { rounds: ROUNDS, onRound: (n, v) => log(`round ${n}: learner ${v.learner!.toFixed(1)} tokens/s, bare step ${v.bare!.toFixed(1)} tokens/s`) },
  );
  log(`the learner's own update (inside the process, checkpoint extra.updateSeconds): ${updateSeconds.map((s) => s.toFixed(2)).join(', ')} s`);
  report.compare({
    metric: `LLM learner update, ${BATCH} samples, replies of ${MAX_TOKENS} words (produce -> consume -> update -> checkpoint committed)`,
    unit: 'tokens/s',
    ours: values.learner,
    baseline: values.bare,
    baselineName: 'bare PyTorch step on the same batch',
    higherIsBetter: true,
  });
  report.save();
} finally {
  learner.kill('SIGTERM');
  bare.stdin!.end();
}
