/**
 * Learner benchmark: `npm run bench:learner [-- --providers cpu --threads 1 --runs 15]`.
 *
 * Every figure is min / median / max over rounds that interleave both sides (bench/harness.ts), set against a
 * baseline measured in the same process, so that a busy machine moves both sides alike:
 *   - update throughput: PPO + Adam steps through the ONNX update model against the same step in tuned
 *     TypeScript (bench/tuned-update.ts, checked against the float64 oracle first), at several batch sizes;
 *   - scoring latency: one rollout decision scored by the ONNX scoring model against the TypeScript
 *     forward pass;
 *   - reload latency (needs the stack; `stack up` runs first): checkpoint committed -> rollout worker serving
 *     it, against a bare publish -> consume on the same broker.
 */
import { performance } from 'node:perf_hooks';
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
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalCheckpointStore } from '../connectors/checkpoints/index.js';
import { catalogTopics, createKafka, ensureTopics, readTopic } from '../connectors/kafka/index.js';
import { TopicSerde } from '../connectors/registry/index.js';
import { PolicyTracker } from '../pipelines/rollout-worker/index.js';
import { onnxRepairKind, seededRandom, type PolicySample } from '../policies/index.js';
import { topicNames } from '../schemas/index.js';
import { stackUp } from '../stack/index.js';
import { benchArgs, BenchReport, interleave, percentile } from './harness.js';
import { TunedUpdate } from './tuned-update.js';

const cli = benchArgs(
  'bench:learner',
  'npm run bench:learner [-- --providers cpu --threads 1 --runs 15]',
  {
    providers: { type: 'string', default: 'cpu' },
    threads: { type: 'string', default: '1' },
    runs: { type: 'string', default: '25' },
    hidden: { type: 'string', default: '32' },
  },
);
const { values: args } = cli;
const runtime: OnnxRuntimeOptions = { executionProviders: args.providers.split(','), intraOpThreads: cli.int('threads', 0) };
const RUNS = cli.int('runs', 3);
const HIDDEN = cli.int('hidden');
const BATCH_SAMPLES = [16, 64, 256];
const report = new BenchReport('learner', `npm run bench:learner -- --providers ${args.providers} --threads ${args.threads} --runs ${RUNS} --hidden ${args.hidden}`);

/** Milliseconds one call takes. */
async function timed(run: () => unknown): Promise<number> {
  const started = performance.now();
  await run();
  return performance.now() - started;
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

async function updateThroughput(params: OnnxParams): Promise<void> {
  const trainer = await OnnxTrainer.create(runtime);
  const options = resolveUpdateOptions();
  const tuned = new TunedUpdate(params);
  console.log(`\nupdate throughput: one PPO + Adam step, hidden ${params.hiddenSize}, ${ONNX_REPAIR_FEATURE_NAMES.length} features, ${RUNS} interleaved rounds`);
  for (const size of BATCH_SAMPLES) {
    const samples = batch(size, seededRandom(`bench/${size}`));
    const decisions = samples.reduce((sum, s) => sum + s.decisions.length, 0);
    const adam = freshAdamState(params);
    // The baseline must compute what the graph computes: check it against the float64 oracle first.
    const oracle = referenceUpdate(params, adam, samples, options);
    const mine = tuned.step(params, adam, samples, options);
    if (Math.abs(mine.gradNorm - oracle.gradNorm) > 1e-6 * Math.max(1, oracle.gradNorm)) throw new Error(`tuned update's gradient norm ${mine.gradNorm} differs from the oracle's ${oracle.gradNorm}`);
    const perSecond = (ms: number): number => (size / ms) * 1000;
    const rates = await interleave(
      { onnx: async () => perSecond(await timed(() => trainer.update(params, adam, samples))), tuned: async () => perSecond(await timed(() => tuned.step(params, adam, samples, options))) },
      { rounds: RUNS, warmup: 3 },
    );
    report.compare({
      metric: `ONNX update, ${size} samples (${decisions} decisions)`,
      unit: 'samples/s',
      ours: rates.onnx,
      baseline: rates.tuned,
      baselineName: 'tuned TypeScript loops',
      higherIsBetter: true,
    });
  }
  await trainer.release();
}

async function scoringLatency(params: OnnxParams): Promise<void> {
  const scorer = await OnnxScorer.create(runtime);
  console.log(`\nscoring latency: one rollout decision, ${RUNS} interleaved rounds`);
  for (const count of [8, 40, 200]) {
    const random = seededRandom(`score/${count}`);
    const features = Array.from({ length: count }, () => candidate(random));
    const micros = await interleave(
      { onnx: async () => 1000 * (await timed(() => scorer.logProbs(params, [features]))), loops: async () => 1000 * (await timed(() => referenceLogProbs(params, features))) },
      { rounds: RUNS, warmup: 3 },
    );
    report.compare({ metric: `ONNX scoring, ${count} candidates`, unit: 'us', ours: micros.onnx, baseline: micros.loops, baselineName: 'TypeScript forward pass', higherIsBetter: false });
  }
  await scorer.release();
}

/**
 * From the learner committing a checkpoint (artifact stored, record published in a transaction) to a
 * rollout worker's tracker serving that version (artifact read and sha256-checked, policy loaded),
 * against a bare publish -> follow of a tiny record on the same broker.
 */
async function reloadLatency(): Promise<void> {
  await stackUp(() => undefined);
  const names = topicNames(`bench-reload-${randomUUID().slice(0, 8)}.`);
  const context = { kafka: createKafka({ clientId: 'bench-reload' }), serde: new TopicSerde(names), names };
  const admin = context.kafka.admin();
  await admin.connect();
  await ensureTopics(admin, [...catalogTopics(names), { topic: `${names.prefix}bare`, partitions: 1, config: {} }]).finally(() => admin.disconnect());
  await context.serde.register();
  const store = new LocalCheckpointStore(mkdtempSync(join(tmpdir(), 'bench-reload-')));
  const served = new Map<number, number>();
  const tracker = await PolicyTracker.follow(context.kafka, context.serde, names, { store, policyId: onnxRepairKind.policyId, onChange: (v) => served.set(v, performance.now()) });
  const bareSeen = new Map<string, number>();
  const bare = await readTopic(context.kafka, { topic: `${names.prefix}bare`, follow: true, onRecord: ({ key }) => void bareSeen.set(key!, performance.now()) });
  const producer = context.kafka.producer({ transactionalId: `${names.prefix}bench-learner` });
  const plain = context.kafka.producer();
  await Promise.all([producer.connect(), plain.connect()]);
  const waitFor = async (seen: () => number | undefined): Promise<number> => {
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 1))) {
      const at = seen();
      if (at !== undefined) return at;
    }
    throw new Error('no reload within 30 s');
  };
  const reload: number[] = [];
  const baseline: number[] = [];
  const base = onnxRepairKind.initial().params;
  for (let version = 1; version <= RUNS; version++) {
    const started = performance.now();
    const bytes = onnxRepairKind.encodeParams(base);
    const artifact = await store.put(onnxRepairKind.policyId, version, bytes);
    const record = await context.serde.encode('policyCheckpoints', {
      policyId: onnxRepairKind.policyId, version, parentVersion: version - 1, featureNames: [...onnxRepairKind.featureNames], weights: [], sha256: artifact.sha256, artifact,
      metrics: { samples: 0, meanReward: 0, meanAbsAdvantage: 0, gradNorm: 0, staleDropped: 0, extra: {} },
      lineage: { taskId: 'all', attempt: 0, runId: 'bench', policyVersion: version, sandboxImageDigest: null, verifierVersion: null, createdAt: new Date().toISOString() },
    });
    const transaction = await producer.transaction();
    await transaction.send({ topic: names.name('policyCheckpoints'), messages: [{ key: onnxRepairKind.policyId, value: record }] });
    await transaction.commit();
    reload.push((await waitFor(() => served.get(version))) - started);

    const bareStarted = performance.now();
    await plain.send({ topic: `${names.prefix}bare`, messages: [{ key: String(version), value: Buffer.from('x') }] });
    baseline.push((await waitFor(() => bareSeen.get(String(version)))) - bareStarted);
  }
  await Promise.all([producer.disconnect(), plain.disconnect(), tracker.close(), bare.stop()]);
  console.log(`\ncheckpoint publish -> rollout reload, ${bytesOf(base)} KiB artifact, ${RUNS} versions (p95: reload ${percentile(reload, 95).toFixed(1)} ms, bare ${percentile(baseline, 95).toFixed(1)} ms)`);
  report.compare({ metric: 'checkpoint publish -> rollout worker serving it', unit: 'ms', ours: reload, baseline, baselineName: 'bare publish -> consume', higherIsBetter: false });
}

const bytesOf = (params: unknown): string => (onnxRepairKind.encodeParams(params as never).length / 1024).toFixed(1);

const SECTIONS = [updateThroughput, scoringLatency, reloadLatency];


const params = initialParams('bench', { hiddenSize: HIDDEN });
// Non-zero output and skip weights, as after some training: the cost is the same, the values realistic.
const random = seededRandom('bench/params');
for (const name of ['outputWeights', 'skipWeights'] as const) params.tensors[name].forEach((_, i, tensor) => (tensor[i] = random() - 0.5));
console.log(`trialrun bench:learner  node ${process.version}  providers [${runtime.executionProviders!.join(', ')}]  intra-op threads ${runtime.intraOpThreads}`);
for (const section of SECTIONS) await section(params);
report.save();
