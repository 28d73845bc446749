/**
 * Analytics benchmark: `npm run bench:analytics [-- --sink-records 20000 --trajectories 1000000 --steps 10 --runs 5 --dir /tmp/trialrun-bench-analytics]`.
 *
 * Every figure stands beside a baseline measured in the same run:
 *   1. sink throughput: rows per second from a Kafka topic of trajectories to Parquet (decode, validate,
 *      Arrow, zstd Parquet, transactional commit), against a bare kafkajs consume loop over the same topic
 *      that only counts the records; medians of --runs rounds, alternating;
 *   2. DuckDB on --trajectories trajectories (x --steps steps each) and their verifications, laid out as
 *      the sink lays them out (run and hour folders, one file per topic partition and offset range): the
 *      pass-rate-by-policy-version query over the Parquet views, against the same query on DuckDB tables
 *      loaded from the same Parquet; the same for a query over the unnested steps; and both again after
 *      `compactStore` merged the files.
 * The data set is generated under --dir at run time (reused by later runs with the same sizes). Part 1
 * needs the stack (Kafka, registry); `--sink-records 0` skips it.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import '../envs/index.js';
import { AnalyticsCatalog, bucketOf, compactStore, dataFileName, listDataFiles, readLedger, TRAJECTORIES, VERIFICATIONS, writeParquetFile } from '../connectors/analytics/index.js';
import { catalogTopics, createKafka, ensureTopics } from '../connectors/kafka/index.js';
import { TopicSerde } from '../connectors/registry/index.js';
import { AnalyticsSink } from '../pipelines/analytics-sink/index.js';
import { topicNames } from '../schemas/index.js';
import { syntheticPassed, syntheticTrajectory, syntheticVerification } from '../test/integration/analytics-fixtures.js';

const { values } = parseArgs({
  options: {
    'sink-records': { type: 'string', default: '20000' },
    trajectories: { type: 'string', default: '1000000' },
    steps: { type: 'string', default: '10' },
    runs: { type: 'string', default: '5' },
    dir: { type: 'string', default: '/tmp/trialrun-bench-analytics' },
  },
});
const count = (name: 'sink-records' | 'trajectories' | 'steps' | 'runs', min: number): number => {
  const value = Number(values[name]);
  if (!Number.isInteger(value) || value < min) throw new Error(`--${name} must be a whole number >= ${min}, got ${values[name]}`);
  return value;
};
const SINK_RECORDS = count('sink-records', 0);
const TRAJECTORIES_N = count('trajectories', 1000);
const STEPS = count('steps', 1);
const RUNS = count('runs', 1);
const DIR = values.dir!;

const median = (xs: number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const log = (line: string): void => void process.stderr.write(`# ${line}\n`);

// ---------------------------------------------------------------------------------------------------
// 1. Sink throughput against a bare consume loop.

async function sinkThroughput(): Promise<{ sink: number[]; bare: number[]; bytes: number }> {
  const names = topicNames(`bench-analytics-${randomUUID().slice(0, 8)}.`);
  const kafka = createKafka({ clientId: 'bench-analytics' });
  const serde = new TopicSerde(names);
  const context = { kafka, serde, names };
  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, catalogTopics(names));
  await serde.register();
  const topic = names.name('trajectories');

  log(`producing ${fmt(SINK_RECORDS)} trajectories (${STEPS} steps each) to ${topic}`);
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  let bytes = 0;
  for (let start = 0; start < SINK_RECORDS; start += 100) {
    const messages = [];
    for (let i = start; i < Math.min(SINK_RECORDS, start + 100); i++) {
      const trajectory = syntheticTrajectory(i, { runId: 'bench', steps: STEPS });
      const value = await serde.encode('trajectories', trajectory);
      bytes += value.length;
      messages.push({ key: trajectory.lineage.taskId, value });
    }
    await producer.send({ topic, messages });
  }
  await producer.disconnect();
  const ends = await admin.fetchTopicOffsets(topic);
  const total = ends.reduce((sum, p) => sum + Number(p.high), 0);

  /** Seconds from the first record handled to the last one done, so group joins do not count. */
  const bareRound = async (): Promise<number> => {
    const consumer = kafka.consumer({ groupId: `bench-bare-${randomUUID()}` });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    let seen = 0;
    let first = 0;
    let last = 0;
    const done = new Promise<void>((resolve) => {
      void consumer.run({
        eachBatch: async ({ batch }) => {
          if (!first) first = performance.now();
          seen += batch.messages.length;
          if (seen >= total) {
            last = performance.now();
            resolve();
          }
        },
      });
    });
    await done;
    await consumer.disconnect();
    return (last - first) / 1000;
  };

  const sinkRound = async (): Promise<number> => {
    const dataDir = join(DIR, `sink-${randomUUID().slice(0, 8)}`);
    const sink = new AnalyticsSink(context, { dataDir, topics: ['trajectories'], rollAgeMs: 200 });
    await sink.start();
    let first = 0;
    while (!first) {
      if (sink.metrics.processed > 0) first = performance.now();
      else await new Promise((resolve) => setTimeout(resolve, 2));
    }
    while (!ends.every((p) => readLedger(dataDir, topic, p.partition) >= BigInt(p.high) - 1n)) await new Promise((resolve) => setTimeout(resolve, 5));
    const last = performance.now();
    await sink.stop();
    if (sink.rowsWritten.get('trajectories') !== SINK_RECORDS) throw new Error(`the sink landed ${sink.rowsWritten.get('trajectories')} rows, expected ${SINK_RECORDS}`);
    await admin.deleteGroups([sink.groupId]);
    rmSync(dataDir, { recursive: true, force: true });
    return (last - first) / 1000;
  };

  const sink: number[] = [];
  const bare: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    bare.push(await bareRound());
    sink.push(await sinkRound());
    log(`round ${run + 1}: bare ${fmt(SINK_RECORDS / bare[run]!)} rows/s, sink ${fmt(SINK_RECORDS / sink[run]!)} rows/s`);
  }
  await admin.deleteTopics({ topics: catalogTopics(names).map((t) => t.topic) }).catch(() => undefined);
  await admin.disconnect();
  return { sink, bare, bytes };
}

// ---------------------------------------------------------------------------------------------------
// 2. DuckDB over the sink's Parquet layout against DuckDB tables of the same data.

const RUN_IDS = ['bench-run-a', 'bench-run-b'];
const ROWS_PER_FILE = 20_000;
const PER_VERSION = 50_000;

/** Writes the data set the way the sink lays it out: per run, hour and topic partition, in offset ranges. */
function generateStore(storeDir: string): void {
  const marker = join(storeDir, 'generated.json');
  const spec = JSON.stringify({ trajectories: TRAJECTORIES_N, steps: STEPS, rowsPerFile: ROWS_PER_FILE, version: 2 });
  if (existsSync(marker) && readFileSync(marker, 'utf8') === spec) return;
  rmSync(storeDir, { recursive: true, force: true });
  log(`generating ${fmt(TRAJECTORIES_N)} trajectories with ${fmt(TRAJECTORIES_N * STEPS)} steps, and their verifications, under ${storeDir}`);
  const started = performance.now();
  const start = Date.parse('2025-01-01T00:00:00Z');
  // One trajectory per 10 ms of event time (a busy cluster): the data set spans hours, so it lands in several hour folders.
  const options = { steps: STEPS, perVersion: PER_VERSION, startMs: start, intervalMs: 10 };
  // Building and checking a million records one by one would take longer than the benchmark: rows reuse
  // the steps of a pool of distinct synthetic episodes (far apart, beyond any compression window) with
  // their own ids, run, policy version, verdict and time.
  const POOL = 1000;
  const trajectoryPool = Array.from({ length: POOL }, (_, i) => syntheticTrajectory(i, options));
  const verificationPool = Array.from({ length: POOL }, (_, i) => syntheticVerification(i, options));
  const identity = (i: number) => {
    const runId = RUN_IDS[i % RUN_IDS.length]!;
    return { runId, trajectoryId: `${runId}/t${i}`, groupId: `${runId}/g${Math.floor(i / 4)}`, policyVersion: Math.floor(i / PER_VERSION), createdAt: new Date(start + i * 10).toISOString() };
  };
  const trajectoryAt = (i: number) => {
    const base = trajectoryPool[i % POOL]!;
    const id = identity(i);
    return { ...base, trajectoryId: id.trajectoryId, groupId: id.groupId, lineage: { ...base.lineage, runId: id.runId, policyVersion: id.policyVersion, createdAt: id.createdAt } };
  };
  const verificationAt = (i: number) => {
    const base = verificationPool[i % POOL]!;
    const id = identity(i);
    const passed = syntheticPassed(i, options);
    return {
      ...base,
      verificationId: `${id.trajectoryId}/v-bench`,
      trajectoryId: id.trajectoryId,
      groupId: id.groupId,
      passed,
      testsPassed: passed ? base.testsTotal : base.testsTotal - 1,
      lineage: { ...base.lineage, runId: id.runId, policyVersion: id.policyVersion, createdAt: id.createdAt },
    };
  };
  const partitions = 3;
  const offsets = [0, 0, 0];
  for (let from = 0; from < TRAJECTORIES_N; from += ROWS_PER_FILE * partitions) {
    for (let partition = 0; partition < partitions; partition++) {
      const indexes: number[] = [];
      for (let i = from + partition; i < Math.min(TRAJECTORIES_N, from + ROWS_PER_FILE * partitions); i += partitions) indexes.push(i);
      if (indexes.length === 0) continue;
      const first = BigInt(offsets[partition]!);
      const last = first + BigInt(indexes.length - 1);
      offsets[partition]! += indexes.length;
      const byBucket = new Map<string, number[]>();
      for (const i of indexes) {
        const bucket = bucketOf(identity(i).runId, identity(i).createdAt);
        const bucketMembers = byBucket.get(bucket) ?? [];
        bucketMembers.push(i);
        byBucket.set(bucket, bucketMembers);
      }
      for (const [bucket, members] of byBucket) {
        const trajectories = members.map((i, k) => ({ record: trajectoryAt(i), meta: { topic: 'bench.trajectories', partition, offset: String(first + BigInt(k)) } }));
        writeParquetFile(join(storeDir, 'trajectories', bucket, dataFileName({ topic: 'bench.trajectories', partition, first, last })), TRAJECTORIES.columns, trajectories);
        const verifications = members.map((i, k) => ({ record: verificationAt(i), meta: { topic: 'bench.verifications', partition, offset: String(first + BigInt(k)) } }));
        writeParquetFile(join(storeDir, 'verifications', bucket, dataFileName({ topic: 'bench.verifications', partition, first, last })), VERIFICATIONS.columns, verifications);
      }
    }
    log(`  ${fmt(Math.min(TRAJECTORIES_N, from + ROWS_PER_FILE * partitions))} trajectories written`);
  }
  // The ledger says everything is landed, as the sink's would, so compaction may merge it all.
  for (const table of ['trajectories', 'verifications']) {
    for (let partition = 0; partition < partitions; partition++) {
      mkdirSync(join(storeDir, '_sink', 'ledger'), { recursive: true });
      writeFileSync(join(storeDir, '_sink', 'ledger', `bench.${table}-p${partition}.json`), JSON.stringify({ topic: `bench.${table}`, partition, landedThrough: String(offsets[partition]! - 1) }));
    }
  }
  writeFileSync(marker, spec);
  log(`generated in ${fmt((performance.now() - started) / 1000, 1)} s`);
}

const QUERIES = {
  'pass rate by policy version': `SELECT t.policy_version, count(*) AS trajectories, avg(CASE WHEN v.passed THEN 1.0 ELSE 0.0 END) AS pass_rate
    FROM trajectories t JOIN verifications v USING (trajectory_id) GROUP BY 1 ORDER BY 1`,
  'tool mix over unnested steps': `SELECT policy_version, tool, count(*) AS calls FROM steps GROUP BY 1, 2 ORDER BY 1, 2`,
};

async function timeQuery(run: (sql: string) => Promise<unknown>, sql: string): Promise<{ times: number[]; result: unknown }> {
  const result = await run(sql); // warm-up: file metadata and the OS page cache
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    await run(sql);
    times.push(performance.now() - started);
  }
  return { times, result };
}

async function duckdbFigures(storeDir: string, label: string): Promise<Array<{ query: string; layout: string; parquetMs: number; tableMs: number }>> {
  const files = listDataFiles(join(storeDir, 'trajectories')).length + listDataFiles(join(storeDir, 'verifications')).length;
  const catalog = await AnalyticsCatalog.open(storeDir);
  const dbPath = join(DIR, `tables-${randomUUID().slice(0, 8)}.duckdb`);
  const instance = await DuckDBInstance.create(dbPath);
  const connection = await instance.connect();
  try {
    // The baseline: the same rows in DuckDB's own storage, loaded from the same Parquet.
    const loadStarted = performance.now();
    for (const table of ['trajectories', 'verifications']) {
      const source = catalog.files.get(table)!.map((file) => `'${file}'`).join(', ');
      await connection.run(`CREATE TABLE ${table} AS SELECT * FROM read_parquet([${source}], union_by_name = true, hive_partitioning = false)`);
    }
    await connection.run(`CREATE VIEW steps AS SELECT trajectory_id, policy_version, step.tool AS tool FROM (SELECT trajectory_id, policy_version, unnest(steps) AS step FROM trajectories)`);
    log(`${label}: ${files} Parquet files; loaded DuckDB tables in ${fmt((performance.now() - loadStarted) / 1000, 1)} s`);
    const figures = [];
    for (const [name, sql] of Object.entries(QUERIES)) {
      const parquet = await timeQuery((q) => catalog.query(q), sql);
      const table = await timeQuery(async (q) => (await connection.runAndReadAll(q)).getRowsJson(), sql);
      if (JSON.stringify(parquet.result && (parquet.result as { rows: unknown }).rows) !== JSON.stringify(table.result)) throw new Error(`${name}: the Parquet views and the tables disagree`);
      figures.push({ query: name, layout: `${label} (${files} files)`, parquetMs: median(parquet.times), tableMs: median(table.times) });
    }
    return figures;
  } finally {
    catalog.close();
    connection.closeSync();
    instance.closeSync();
    rmSync(dbPath, { force: true });
    rmSync(`${dbPath}.wal`, { force: true });
  }
}

async function main(): Promise<void> {
  mkdirSync(DIR, { recursive: true });
  console.log(`trialrun analytics benchmark (${RUNS} runs per figure, medians; ${new Date().toISOString()})\n`);

  if (SINK_RECORDS > 0) {
    const { sink, bare, bytes } = await sinkThroughput();
    const sinkRate = SINK_RECORDS / median(sink);
    const bareRate = SINK_RECORDS / median(bare);
    console.log(`1. Kafka -> Parquet sink, ${fmt(SINK_RECORDS)} trajectories of ${STEPS} steps (${fmt(bytes / SINK_RECORDS)} bytes each on the topic)`);
    console.log(`   sink (decode + validate + Arrow + Parquet + commit)  ${fmt(sinkRate).padStart(10)} rows/s   median ${fmt(median(sink), 2)} s`);
    console.log(`   bare consume loop (count only)                        ${fmt(bareRate).padStart(10)} rows/s   median ${fmt(median(bare), 2)} s`);
    console.log(`   sink / bare                                           ${fmt(sinkRate / bareRate, 3).padStart(10)}\n`);
  }

  const storeDir = join(DIR, `store-${TRAJECTORIES_N}x${STEPS}`);
  generateStore(storeDir);
  const figures = await duckdbFigures(storeDir, 'as the sink writes it');
  const compactedDir = join(DIR, `store-${TRAJECTORIES_N}x${STEPS}-compacted`);
  rmSync(compactedDir, { recursive: true, force: true });
  const { cpSync } = await import('node:fs');
  cpSync(storeDir, compactedDir, { recursive: true });
  const compactStarted = performance.now();
  const reports = await compactStore(compactedDir, { tables: ['trajectories', 'verifications'], smallFileBytes: 512 * 1024 * 1024, targetFileBytes: 1024 * 1024 * 1024 });
  log(`compacted ${reports.map((r) => `${r.table} ${r.filesBefore} -> ${r.filesAfter}`).join(', ')} in ${fmt((performance.now() - compactStarted) / 1000, 1)} s`);
  figures.push(...(await duckdbFigures(compactedDir, 'after trialrun compact')));
  rmSync(compactedDir, { recursive: true, force: true });

  console.log(`2. DuckDB, ${fmt(TRAJECTORIES_N)} trajectories, ${fmt(TRAJECTORIES_N * STEPS)} steps, ${fmt(TRAJECTORIES_N)} verifications`);
  for (const f of figures) {
    console.log(`   ${f.query.padEnd(30)} ${f.layout.padEnd(36)} Parquet views ${fmt(f.parquetMs).padStart(6)} ms   DuckDB tables ${fmt(f.tableMs).padStart(6)} ms   ratio ${fmt(f.parquetMs / f.tableMs, 2)}`);
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench:analytics failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
