/**
 * Learner benchmark: `npm run bench:learner [-- --providers cpu --threads 1 --runs 15]`.
 *
 * Every figure is a median over repeated runs, set against a baseline measured in the same process, so
 * that a busy machine moves both sides alike:
 *   - update throughput: PPO + Adam steps through the ONNX update model against the same step written in
 *     plain TypeScript loops (policies/onnx-repair/reference.ts), at several batch sizes;
 *   - scoring latency: one rollout decision scored by the ONNX scoring model against the TypeScript
 *     forward pass.
 */
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import {
  freshAdamState,
  initialParams,
  OnnxScorer,
  OnnxTrainer,
  ONNX_REPAIR_FEATURE_NAMES,
  referenceLogProbs,
  referenceUpdate,
  resolveUpdateOptions,
  type OnnxParams,
  type OnnxRuntimeOptions,
} from '../policies/onnx-repair/index.js';
import { seededRandom, type PolicySample } from '../policies/index.js';

const { values: args } = parseArgs({
  options: {
    providers: { type: 'string', default: 'cpu' },
    threads: { type: 'string', default: '1' },
    runs: { type: 'string', default: '25' },
    hidden: { type: 'string', default: '32' },
  },
});
const runtime: OnnxRuntimeOptions = { executionProviders: args.providers.split(','), intraOpThreads: Number(args.threads) };
const RUNS = Number(args.runs);
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error(`--runs must be a whole number >= 1, got ${args.runs}`);
const WARMUP = 3;
const BATCH_SAMPLES = [16, 64, 256];

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

async function timeMs(run: () => unknown): Promise<number[]> {
  for (let i = 0; i < WARMUP; i++) await run();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    await run();
    times.push(performance.now() - started);
  }
  return times;
}

/** Candidates like the repair env's: one edit-kind one-hot, then sparse features in [0, 1]. */
function candidate(random: () => number): number[] {
  const kind = Math.floor(random() * 9);
  return ONNX_REPAIR_FEATURE_NAMES.map((_, i) => (i < 9 ? Number(i === kind) : random() < 0.5 ? 0 : random()));
}

/** Trajectories of 1-4 learned choices among 8-40 candidate edits, with group-relative advantages. */
function batch(samples: number, random: () => number): PolicySample[] {
  return Array.from({ length: samples }, () => ({
    advantage: random() * 2 - 1,
    weight: 1,
    decisions: Array.from({ length: 1 + Math.floor(random() * 4) }, () => {
      const features = Array.from({ length: 8 + Math.floor(random() * 33) }, () => candidate(random));
      return { features, chosen: Math.floor(random() * features.length), logprob: -Math.log(features.length) };
    }),
  }));
}

function row(cells: (string | number)[], widths: number[]): string {
  return cells.map((cell, i) => String(cell).padStart(widths[i]!)).join('  ');
}

async function updateThroughput(params: OnnxParams): Promise<void> {
  const trainer = await OnnxTrainer.create(runtime);
  const options = resolveUpdateOptions();
  const widths = [8, 10, 13, 13, 15, 15, 12];
  console.log(`\nupdate throughput: one PPO + Adam step, hidden ${params.hiddenSize}, ${ONNX_REPAIR_FEATURE_NAMES.length} features, median of ${RUNS}`);
  console.log(row(['samples', 'decisions', 'onnx ms', 'ts loops ms', 'onnx samples/s', 'ts samples/s', 'onnx/ts'], widths));
  for (const size of BATCH_SAMPLES) {
    const samples = batch(size, seededRandom(`bench/${size}`));
    const decisions = samples.reduce((sum, s) => sum + s.decisions.length, 0);
    const adam = freshAdamState(params);
    const onnx = median(await timeMs(() => trainer.update(params, adam, samples)));
    const loops = median(await timeMs(() => referenceUpdate(params, adam, samples, options)));
    const rate = (ms: number): number => Math.round((size / ms) * 1000);
    console.log(row([size, decisions, onnx.toFixed(2), loops.toFixed(2), rate(onnx), rate(loops), `${(loops / onnx).toFixed(1)}x`], widths));
  }
  await trainer.release();
}

async function scoringLatency(params: OnnxParams): Promise<void> {
  const scorer = await OnnxScorer.create(runtime);
  const widths = [11, 13, 13, 12];
  console.log(`\nscoring latency: one rollout decision, median of ${RUNS}`);
  console.log(row(['candidates', 'onnx us', 'ts loops us', 'onnx/ts'], widths));
  for (const count of [8, 40, 200]) {
    const random = seededRandom(`score/${count}`);
    const features = Array.from({ length: count }, () => candidate(random));
    const onnx = median(await timeMs(() => scorer.logProbs(params, [features])));
    const loops = median(await timeMs(() => referenceLogProbs(params, features)));
    console.log(row([count, (onnx * 1000).toFixed(0), (loops * 1000).toFixed(0), `${(loops / onnx).toFixed(1)}x`], widths));
  }
  await scorer.release();
}

// Checkpoint publish -> rollout reload latency joins as a third section once the checkpoint store and the
// rollout worker's reload exist (that one needs the stack running; these two need nothing).
const SECTIONS = [updateThroughput, scoringLatency];

const params = initialParams('bench', { hiddenSize: Number(args.hidden) });
// Non-zero output and skip weights, as after some training: the cost is the same, the values realistic.
const random = seededRandom('bench/params');
for (const name of ['outputWeights', 'skipWeights'] as const) params.tensors[name].forEach((_, i, tensor) => (tensor[i] = random() - 0.5));
console.log(`trialrun bench:learner  node ${process.version}  providers [${runtime.executionProviders!.join(', ')}]  intra-op threads ${runtime.intraOpThreads}`);
for (const section of SECTIONS) await section(params);
