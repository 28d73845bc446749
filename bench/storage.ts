/**
 * Storage benchmark: `npm run bench:storage [-- --rounds 5 --sink-records 5000 --versions 5 --tree-mb 50]`.
 *
 * Every figure on the S3 server (the stack's SeaweedFS, `trialrun stack up --s3`) stands beside the same work on a
 * local folder, the two sides alternating over --rounds rounds after one warm-up round, printed as min / median /
 * max with the per-round ratio S3 / local:
 *   1. analytics sink: rows per second from a Kafka topic of --sink-records trajectories into the lake (Parquet,
 *      the ledger, the offsets commit), from the first record handled to the last file landed by a graceful stop;
 *   2. checkpoint publish -> a rollout worker's PolicyTracker serving that version: the artifact put through the
 *      checkpoint store, the record committed, the tracker reading the record and loading the artifact verified
 *      (p50 of --versions versions per round; one host, so the "remote" worker shares this machine's network);
 *   3. the claim-check tree store: put and get of a --tree-mb MB task tree (fresh contents each round, so nothing
 *      is skipped as already stored), p50 milliseconds and MB/s.
 * Needs the stack with its S3 server (brought up here if it is not).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import '../envs/index.js';
import { BlobTreeStore } from '../connectors/artifacts/index.js';
import { BlobCheckpointStore, type CheckpointStore } from '../connectors/checkpoints/index.js';
import { catalogTopics, createKafka, ensureTopics } from '../connectors/kafka/index.js';
import { TopicSerde } from '../connectors/registry/index.js';
import { LocalBlobStore, S3BlobStore, type BlobStore } from '../connectors/storage/index.js';
import { AnalyticsSink } from '../pipelines/analytics-sink/index.js';
import { PolicyTracker } from '../pipelines/rollout-worker/index.js';
import { onnxRepairKind } from '../policies/index.js';
import { topicNames, type FileTree } from '../schemas/index.js';
import { stackComponents, stackUp } from '../stack/index.js';
import { syntheticTrajectory } from '../test/integration/analytics-fixtures.js';
import { benchArgs, BenchReport, interleave, median } from './harness.js';

const cli = benchArgs(
  'bench:storage',
  'npm run bench:storage [-- --rounds 5 --sink-records 5000 --versions 5 --tree-mb 50]',
  {
    rounds: { type: 'string', default: '5' },
    'sink-records': { type: 'string', default: '5000' },
    versions: { type: 'string', default: '5' },
    'tree-mb': { type: 'string', default: '50' },
  },
);
const { values } = cli;
const count = (name: keyof typeof values, min: number): number => cli.int(name, min);
const ROUNDS = count('rounds', 3);
const SINK_RECORDS = count('sink-records', 1);
const VERSIONS = count('versions', 1);
const TREE_MB = count('tree-mb', 1);
const SIDES = ['local', 's3'] as const;
type Side = (typeof SIDES)[number];

const log = (line: string): void => void process.stderr.write(`# ${line}\n`);
const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const run = randomUUID().slice(0, 8);
const localRoot = mkdtempSync(join(tmpdir(), 'trialrun-bench-storage-'));
/** Where each side keeps `what`: a fresh folder, or a fresh prefix in the stack's bucket. */
const location = (side: Side, what: string): string => (side === 'local' ? join(localRoot, what) : `s3://trialrun/bench-storage-${run}/${what}`);
const blobStore = (side: Side, what: string): BlobStore => (side === 'local' ? new LocalBlobStore(location(side, what)) : new S3BlobStore(location(side, what)));

async function removeAll(store: BlobStore): Promise<void> {
  const keys = await store.list('');
  for (let i = 0; i < keys.length; i += 16) await Promise.all(keys.slice(i, i + 16).map((blob) => store.delete(blob.key)));
}

const waitFor = async (condition: () => boolean, what: string, timeoutMs = 300_000): Promise<void> => {
  for (const deadline = Date.now() + timeoutMs; !condition(); await new Promise((resolve) => setTimeout(resolve, 2))) {
    if (Date.now() > deadline) throw new Error(`no ${what} within ${timeoutMs / 1000} s`);
  }
};

/** 1. The sink into the lake: rows per second, one value per side per round. */
async function sinkRates(): Promise<Record<Side, number[]>> {
  const names = topicNames(`bench-storage-${run}.`);
  const kafka = createKafka({ clientId: 'bench-storage' });
  const context = { kafka, serde: new TopicSerde(names), names };
  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, catalogTopics(names));
  await context.serde.register();
  const topic = names.name('trajectories');
  log(`producing ${fmt(SINK_RECORDS)} trajectories to ${topic}`);
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  for (let start = 0; start < SINK_RECORDS; start += 100) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(100, SINK_RECORDS - start) }, async (_, j) => {
        const trajectory = syntheticTrajectory(start + j, { runId: 'bench-storage', steps: 3 });
        return { key: trajectory.lineage.taskId, value: await context.serde.encode('trajectories', trajectory) };
      }),
    );
    await producer.send({ topic, messages: batch });
  }
  await producer.disconnect();
  const round = async (side: Side): Promise<number> => {
    const dataDir = location(side, `lake-${randomUUID().slice(0, 8)}`);
    const sink = new AnalyticsSink(context, { dataDir, topics: ['trajectories'] });
    await sink.start();
    await waitFor(() => sink.metrics.processed > 0, 'first record');
    const first = performance.now();
    await waitFor(() => sink.metrics.processed >= SINK_RECORDS, 'last record');
    await sink.stop();
    const seconds = (performance.now() - first) / 1000;
    if (sink.rowsWritten.get('trajectories') !== SINK_RECORDS) throw new Error(`the sink on ${side} landed ${sink.rowsWritten.get('trajectories')} rows, expected ${SINK_RECORDS}`);
    await admin.deleteGroups([sink.groupId]);
    if (side === 'local') rmSync(dataDir, { recursive: true, force: true });
    else await removeAll(new S3BlobStore(dataDir));
    return SINK_RECORDS / seconds;
  };
  const rates = await interleave({ local: () => round('local'), s3: () => round('s3') }, { rounds: ROUNDS, onRound: (n, v) => log(`sink round ${n}: local ${fmt(v.local!)} rows/s, s3 ${fmt(v.s3!)} rows/s`) });
  await admin.deleteTopics(catalogTopics(names).map((t) => t.topic)).catch(() => undefined);
  await admin.disconnect();
  return rates;
}

/** 2. Checkpoint publish -> a PolicyTracker serving it, p50 milliseconds of --versions versions per round. */
async function checkpointLatencies(): Promise<Record<Side, number[]>> {
  const kafka = createKafka({ clientId: 'bench-storage-checkpoints' });
  const admin = kafka.admin();
  await admin.connect();
  const sides = await Promise.all(
    SIDES.map(async (side) => {
      const names = topicNames(`bench-storage-${run}-${side}.`);
      const serde = new TopicSerde(names);
      await ensureTopics(admin, catalogTopics(names));
      await serde.register();
      const store: CheckpointStore = new BlobCheckpointStore(blobStore(side, 'checkpoints'));
      const served = new Map<number, number>();
      const tracker = await PolicyTracker.follow(kafka, serde, names, { store, policyId: onnxRepairKind.policyId, onChange: (version) => served.set(version, performance.now()) });
      const producer = kafka.producer({ transactionalId: `${names.prefix}bench-learner` });
      await producer.connect();
      return { side, names, serde, store, served, tracker, producer, version: 0 };
    }),
  );
  const bytes = onnxRepairKind.encodeParams(onnxRepairKind.initial().params);
  const round = async (index: number): Promise<number> => {
    const s = sides[index]!;
    const latencies: number[] = [];
    for (let i = 0; i < VERSIONS; i++) {
      const version = ++s.version;
      const started = performance.now();
      const artifact = await s.store.put(onnxRepairKind.policyId, version, bytes);
      const record = await s.serde.encode('policyCheckpoints', {
        policyId: onnxRepairKind.policyId, version, parentVersion: version - 1, featureNames: [...onnxRepairKind.featureNames], weights: [], sha256: artifact.sha256, artifact,
        metrics: { samples: 0, meanReward: 0, meanAbsAdvantage: 0, gradNorm: 0, staleDropped: 0, extra: {} },
        lineage: { taskId: 'all', attempt: 0, runId: 'bench-storage', policyVersion: version, sandboxImageDigest: null, verifierVersion: null, createdAt: new Date().toISOString() },
      });
      const transaction = await s.producer.transaction();
      await transaction.send({ topic: s.names.name('policyCheckpoints'), messages: [{ key: onnxRepairKind.policyId, value: record }] });
      await transaction.commit();
      await waitFor(() => s.served.has(version), `version ${version} served on ${s.side}`, 60_000);
      latencies.push(s.served.get(version)! - started);
    }
    return median(latencies);
  };
  const latencies = await interleave({ local: () => round(0), s3: () => round(1) }, { rounds: ROUNDS, onRound: (n, v) => log(`checkpoint round ${n}: local ${fmt(v.local!, 1)} ms, s3 ${fmt(v.s3!, 1)} ms (p50 of ${VERSIONS} versions)`) });
  for (const s of sides) {
    await Promise.all([s.producer.disconnect(), s.tracker.close()]);
    await admin.deleteTopics(catalogTopics(s.names).map((t) => t.topic)).catch(() => undefined);
  }
  await admin.disconnect();
  return latencies;
}

/** A task tree of --tree-mb MB of text in 500 KB files, different every call. */
function freshTree(): FileTree {
  const tree: FileTree = {};
  const fileBytes = 500 * 1024;
  for (let i = 0; i < Math.ceil((TREE_MB * 1024 * 1024) / fileBytes); i++) tree[`src/module_${i}.txt`] = randomBytes((fileBytes * 3) / 4).toString('base64');
  return tree;
}

/** 3. Tree store put and get of one fresh tree per side per round, milliseconds. */
async function treeTimes(): Promise<{ put: Record<Side, number[]>; get: Record<Side, number[]> }> {
  const put: Record<Side, number[]> = { local: [], s3: [] };
  const get: Record<Side, number[]> = { local: [], s3: [] };
  const round = async (side: Side): Promise<number> => {
    const blobs = blobStore(side, `trees-${randomUUID().slice(0, 8)}`);
    const store = new BlobTreeStore(blobs);
    const tree = freshTree();
    let started = performance.now();
    const ref = await store.put(tree);
    const putMs = performance.now() - started;
    started = performance.now();
    const back = await store.get(ref);
    const getMs = performance.now() - started;
    if (Object.keys(back).length !== Object.keys(tree).length) throw new Error(`the tree on ${side} came back with ${Object.keys(back).length} files`);
    await removeAll(blobs);
    blobs.close();
    put[side].push(putMs);
    get[side].push(getMs);
    return putMs;
  };
  await interleave({ local: () => round('local'), s3: () => round('s3') }, { rounds: ROUNDS, onRound: (n) => log(`tree round ${n}: put local ${fmt(put.local.at(-1)!)} ms, s3 ${fmt(put.s3.at(-1)!)} ms; get local ${fmt(get.local.at(-1)!)} ms, s3 ${fmt(get.s3.at(-1)!)} ms`) });
  // The warm-up round (the first of each side) does not count.
  for (const side of SIDES) {
    put[side].shift();
    get[side].shift();
  }
  return { put, get };
}

async function main(): Promise<void> {
  await stackUp(log, stackComponents({ s3: true }));
  const report = new BenchReport('storage', `npm run bench:storage -- --rounds ${ROUNDS} --sink-records ${SINK_RECORDS} --versions ${VERSIONS} --tree-mb ${TREE_MB}`);
  try {
    const sink = await sinkRates();
    report.compare({ metric: `analytics sink into the lake, ${fmt(SINK_RECORDS)} trajectories of 3 steps`, unit: 'rows/s', ours: sink.s3, baseline: sink.local, baselineName: 'local folder', higherIsBetter: true });
    const checkpoints = await checkpointLatencies();
    report.compare({ metric: `checkpoint publish -> rollout worker serving it (p50 of ${VERSIONS} per round, ${fmt(onnxRepairKind.encodeParams(onnxRepairKind.initial().params).length / 1024, 1)} KiB artifact)`, unit: 'ms', ours: checkpoints.s3, baseline: checkpoints.local, baselineName: 'local folder', higherIsBetter: false });
    const trees = await treeTimes();
    report.compare({ metric: `tree store put, ${TREE_MB} MB task tree`, unit: 'ms', ours: trees.put.s3, baseline: trees.put.local, baselineName: 'local folder', higherIsBetter: false });
    report.compare({ metric: `tree store get, ${TREE_MB} MB task tree`, unit: 'ms', ours: trees.get.s3, baseline: trees.get.local, baselineName: 'local folder', higherIsBetter: false });
    const rate = (ms: readonly number[]): number[] => ms.map((m) => TREE_MB / (m / 1000));
    report.compare({ metric: `tree store put, ${TREE_MB} MB task tree`, unit: 'MB/s', ours: rate(trees.put.s3), baseline: rate(trees.put.local), baselineName: 'local folder', higherIsBetter: true });
    report.compare({ metric: `tree store get, ${TREE_MB} MB task tree`, unit: 'MB/s', ours: rate(trees.get.s3), baseline: rate(trees.get.local), baselineName: 'local folder', higherIsBetter: true });
    report.save();
  } finally {
    rmSync(localRoot, { recursive: true, force: true });
  }
}

await main();
process.exit(0);
