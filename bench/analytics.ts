/**
 * Analytics benchmark: `npm run bench:analytics [-- --sink-records 20000 --trajectories 1000000 --steps 10 --runs 5 --writer-threads 1 --dir /tmp/trialrun-bench-analytics]`.
 *
 * Every figure stands beside a baseline measured in the same run, the two sides alternating over --runs
 * rounds (at least 3) after one warm-up round of each, printed as median (min to max) with the load
 * average at each round:
 *   1. sink throughput: rows per second from a Kafka topic of trajectories to Parquet (decode, validate,
 *      zstd Parquet by DuckDB, transactional commit), with the sink's default roll settings, against a
 *      bare kafkajs consume loop over the same topic that only counts the records; and where the sink's
 *      time goes per record (its stage timers, and JSON parsing, the contract check, the record's line and
 *      DuckDB's Parquet writing taken apart on the same records: the last two are also what DuckDB's own
 *      JSON -> Parquet copy of the records would cost, the ceiling of any sink that checks what it lands,
 *      measured with the sink's writer threads and again with DuckDB on every core);
 *   2. DuckDB on --trajectories trajectories (x --steps steps each) and their verifications, laid out as
 *      the sink lays them out (run and hour folders, one file per topic partition and offset range): the
 *      pass-rate-by-policy-version query over the Parquet views, against the same query on DuckDB tables
 *      loaded from the same Parquet; the same for a query over the unnested steps; and both again after
 *      `compactStore` merged the files.
 * The data set is generated under --dir at run time (reused by later runs with the same sizes). Part 1
 * needs the stack (Kafka, registry); `--sink-records 0` skips it, `--trajectories 0` skips part 2.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import '../envs/index.js';
import { AnalyticsCatalog, bucketOf, compactStore, dataFileName, listDataFiles, ParquetWriter, readLedger, recordLinesOf, TRAJECTORIES, VERIFICATIONS } from '../connectors/analytics/index.js';
import { catalogTopics, createKafka, ensureTopics } from '../connectors/kafka/index.js';
import { parseContract, TopicSerde, WireCheck } from '../connectors/registry/index.js';
import { AnalyticsSink, type SinkStageTimes } from '../pipelines/analytics-sink/index.js';
import { topicNames } from '../schemas/index.js';
import { syntheticPassed, syntheticTrajectory, syntheticVerification } from '../test/integration/analytics-fixtures.js';
import { benchArgs, BenchReport, figures as spread, interleave, type Figures as Spread } from './harness.js';

const cli = benchArgs(
  'bench:analytics',
  'npm run bench:analytics [-- --sink-records 20000 --trajectories 1000000 --steps 10 --runs 5 --writer-threads 1 --dir /tmp/trialrun-bench-analytics]',
  {
    'sink-records': { type: 'string', default: '20000' },
    trajectories: { type: 'string', default: '1000000' },
    steps: { type: 'string', default: '10' },
    runs: { type: 'string', default: '5' },
    dir: { type: 'string', default: '/tmp/trialrun-bench-analytics' },
    'writer-threads': { type: 'string', default: '1' },
  },
);
const { values } = cli;
const count = (name: 'sink-records' | 'trajectories' | 'steps' | 'runs' | 'writer-threads', min: number): number => cli.int(name, min);
const SINK_RECORDS = count('sink-records', 0);
const TRAJECTORIES_N = count('trajectories', 0);
const STEPS = count('steps', 1);
const RUNS = count('runs', 3);
const DIR = values.dir!;
/** AnalyticsSinkOptions.writerThreads of the sink measured (its default, 1), and of the Parquet part measured apart. */
const SINK_WRITER_THREADS = count('writer-threads', 1);

const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const log = (line: string): void => void process.stderr.write(`# ${line}\n`);

// ---------------------------------------------------------------------------------------------------
// 1. Sink throughput against a bare consume loop, and where the sink's time goes.

/** The stage of `workParts` that is DuckDB alone: the lines of the run's records to one Parquet file. */
const PARQUET_FROM_LINES = 'Parquet from the lines (DuckDB: JSON, SQL columns, zstd; one file)';
/** DuckDB threads of the second, unbounded ceiling: every core the machine has. */
const ALL_CORES = availableParallelism();
/** The same, DuckDB on every core: what no sink through DuckDB can beat on this machine, even one that left DuckDB every core. */
const PARQUET_FROM_LINES_ALL_CORES = `  the same, DuckDB on every core (${ALL_CORES} threads)`;
const showSpread = (s: Spread, digits = 0): string => `${fmt(s.median, digits).padStart(9)}  (${fmt(s.min, digits)} to ${fmt(s.max, digits)})`;
const loadAverage = (): number => loadavg()[0]!;

interface SinkFigures {
  /** Rows per second, one per round. */
  sink: number[];
  bare: number[];
  /** 1-minute load average at the start of each round. */
  load: number[];
  /** CPU microseconds per record of this process (every thread: JavaScript, the Kafka client, DuckDB), one per round. */
  sinkCpu: number[];
  bareCpu: number[];
  /** Microseconds per record of each stage, one value per round. */
  stages: Map<string, number[]>;
  bytesPerRecord: number;
}

async function sinkThroughput(): Promise<SinkFigures> {
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
  const encoded: Buffer[] = [];
  for (let start = 0; start < SINK_RECORDS; start += 100) {
    const messages = [];
    for (let i = start; i < Math.min(SINK_RECORDS, start + 100); i++) {
      const trajectory = syntheticTrajectory(i, { runId: 'bench', steps: STEPS });
      const value = await serde.encode('trajectories', trajectory);
      encoded.push(value);
      messages.push({ key: trajectory.lineage.taskId, value });
    }
    await producer.send({ topic, messages });
  }
  await producer.disconnect();
  const ends = await admin.fetchTopicOffsets(topic);
  const total = ends.reduce((sum, p) => sum + Number(p.high), 0);
  const waitFor = async (condition: () => boolean): Promise<void> => {
    while (!condition()) await new Promise((resolve) => setTimeout(resolve, 2));
  };

  const cpuSince = (start: NodeJS.CpuUsage): number => {
    const used = process.cpuUsage(start);
    return used.user + used.system;
  };

  /** Seconds (and CPU microseconds) from the first record handled to the last one done, so group joins do not count. */
  const bareRound = async (): Promise<{ seconds: number; cpu: number }> => {
    const consumer = kafka.consumer({ groupId: `bench-bare-${randomUUID()}` });
    await consumer.connect();
    await consumer.subscribe([topic]);
    let seen = 0;
    let first = 0;
    let last = 0;
    let cpuStart = process.cpuUsage();
    let cpu = 0;
    const done = new Promise<void>((resolve) => {
      void consumer.run({
        eachBatch: async ({ batch, resolveOffset }) => {
          if (!first) {
            first = performance.now();
            cpuStart = process.cpuUsage();
          }
          seen += batch.messages.length;
          resolveOffset(batch.messages[batch.messages.length - 1]!.offset);
          if (seen >= total) {
            last = performance.now();
            cpu = cpuSince(cpuStart);
            resolve();
          }
        },
      });
    });
    await done;
    await consumer.disconnect();
    return { seconds: (last - first) / 1000, cpu };
  };

  /**
   * Seconds from the first record handled to the last one landed (in files, committed, in the ledger),
   * with the sink's default roll settings; the last partial files are written by a graceful stop.
   */
  const sinkRound = async (): Promise<{ seconds: number; cpu: number; stageMs: SinkStageTimes }> => {
    const dataDir = join(DIR, `sink-${randomUUID().slice(0, 8)}`);
    const sink = new AnalyticsSink(context, { dataDir, topics: ['trajectories'], writerThreads: SINK_WRITER_THREADS });
    await sink.start();
    await waitFor(() => sink.metrics.processed > 0);
    const first = performance.now();
    const cpuStart = process.cpuUsage();
    await waitFor(() => sink.metrics.processed >= total);
    const stopped = sink.stop();
    await waitFor(() => ends.every((p) => readLedger(dataDir, topic, p.partition) >= BigInt(p.high) - 1n));
    const last = performance.now();
    const cpu = cpuSince(cpuStart);
    await stopped;
    if (sink.rowsWritten.get('trajectories') !== SINK_RECORDS) throw new Error(`the sink landed ${sink.rowsWritten.get('trajectories')} rows, expected ${SINK_RECORDS}`);
    await admin.deleteGroups([sink.groupId]);
    rmSync(dataDir, { recursive: true, force: true });
    return { seconds: (last - first) / 1000, cpu, stageMs: { ...sink.stageMs } };
  };

  /**
   * The sink's work taken apart on the same records, outside Kafka: the whole of serde.check, and what
   * JSON parsing and the contract check (the contract's JSON Schema, WireCheck) each cost of it; the
   * record's line (RecordLines: its own bytes copied, nothing printed again); and DuckDB parsing the lines
   * and writing the rows as zstd Parquet, with the sink's writer settings. For comparison, zod's check of
   * the same records, which the sink no longer runs. Timed record by record, as the sink does.
   */
  const workParts = async (): Promise<Record<string, number>> => {
    let check = 0;
    let jsonParse = 0;
    let contract = 0;
    let zod = 0;
    let staging = 0;
    const wireCheck = new WireCheck();
    const recordLines = recordLinesOf(TRAJECTORIES);
    const lines: Buffer[] = [];
    for (const [offset, bytes] of encoded.entries()) {
      let started = performance.now();
      await serde.check('trajectories', bytes);
      check += performance.now() - started;
      started = performance.now();
      const json = bytes.subarray(5);
      const input = JSON.parse(json.toString('utf8')) as unknown;
      jsonParse += performance.now() - started;
      started = performance.now();
      wireCheck.check('trajectories', input);
      contract += performance.now() - started;
      started = performance.now();
      parseContract('trajectories', input);
      zod += performance.now() - started;
      started = performance.now();
      lines.push(...recordLines.line(input, json, { topic, partition: 0, offset: String(offset) }, (checked) => parseContract('trajectories', checked)));
      staging += performance.now() - started;
    }
    const parquetFromLines = async (threads: number): Promise<number> => {
      const writer = await ParquetWriter.open({ threads });
      const path = join(DIR, `parts-${randomUUID().slice(0, 8)}.parquet`);
      const started = performance.now();
      await writer.writeLines(path, TRAJECTORIES, lines);
      const elapsed = performance.now() - started;
      writer.close();
      rmSync(path, { force: true });
      return elapsed;
    };
    const parquet = await parquetFromLines(SINK_WRITER_THREADS);
    const parquetAllCores = await parquetFromLines(ALL_CORES);
    const perRecord = (ms: number): number => (ms * 1000) / encoded.length;
    return {
      'serde.check, all of it': perRecord(check),
      '  of which JSON.parse': perRecord(jsonParse),
      '  of which the contract check (JSON Schema, ajv)': perRecord(contract),
      'the record\'s line (RecordLines)': perRecord(staging),
      [PARQUET_FROM_LINES]: perRecord(parquet),
      [PARQUET_FROM_LINES_ALL_CORES]: perRecord(parquetAllCores),
      'for comparison, zod\'s check (no longer run)': perRecord(zod),
    };
  };

  const figures: SinkFigures = { sink: [], bare: [], load: [], sinkCpu: [], bareCpu: [], stages: new Map(), bytesPerRecord: encoded.reduce((sum, b) => sum + b.length, 0) / encoded.length };
  const addStage = (name: string, microseconds: number): void => void figures.stages.set(name, [...(figures.stages.get(name) ?? []), microseconds]);
  // One round of each side first, not counted (the JIT, the broker's page cache and DuckDB warm up); then
  // the sides alternate (bare, sink; sink, bare; ...), so load from elsewhere lands on both alike.
  let bareLast = { seconds: 0, cpu: 0 };
  let sinkLast: { seconds: number; cpu: number; stageMs: SinkStageTimes } = { seconds: 0, cpu: 0, stageMs: { decode: 0, write: 0, commit: 0, waiting: 0 } };
  log('warm-up round (not counted)');
  await interleave(
    {
      bare: async () => {
        bareLast = await bareRound();
        return SINK_RECORDS / bareLast.seconds;
      },
      sink: async () => {
        sinkLast = await sinkRound();
        return SINK_RECORDS / sinkLast.seconds;
      },
    },
    {
      rounds: RUNS,
      onRound: async (round) => {
        const { seconds: bare, cpu: bareCpu } = bareLast;
        const { seconds, cpu: sinkCpu, stageMs } = sinkLast;
        figures.load.push(loadAverage());
        figures.bare.push(SINK_RECORDS / bare);
        figures.sink.push(SINK_RECORDS / seconds);
        figures.bareCpu.push(bareCpu / SINK_RECORDS);
        figures.sinkCpu.push(sinkCpu / SINK_RECORDS);
        const us = (ms: number): number => (ms * 1000) / SINK_RECORDS;
        addStage('bare consume loop, all of it', (bare * 1e6) / SINK_RECORDS);
        addStage('sink, all of it', (seconds * 1e6) / SINK_RECORDS);
        addStage('  decode, contract check, line staged', us(stageMs.decode));
        addStage('  waiting for the flush before to land', us(stageMs.waiting));
        addStage('  the rest (consumer: fetch, framing)', us(seconds * 1000 - stageMs.decode - stageMs.waiting));
        addStage('  behind: Parquet files (DuckDB, fsync)', us(stageMs.write));
        addStage('  behind: commit (transaction, ledger)', us(stageMs.commit));
        for (const [name, value] of Object.entries(await workParts())) addStage(name, value);
        const run = round - 1;
        log(`round ${round}: load ${fmt(figures.load[run]!, 1)}, bare ${fmt(figures.bare[run]!)} rows/s (${fmt(figures.bareCpu[run]!, 1)} CPU µs/record), sink ${fmt(figures.sink[run]!)} rows/s (${fmt(figures.sinkCpu[run]!, 1)} CPU µs/record), ratio ${fmt(figures.sink[run]! / figures.bare[run]!, 3)}`);
      },
    },
  );
  await admin.deleteTopics(catalogTopics(names).map((t) => t.topic)).catch(() => undefined);
  await admin.disconnect();
  return figures;
}

// ---------------------------------------------------------------------------------------------------
// 2. DuckDB over the sink's Parquet layout against DuckDB tables of the same data.

const RUN_IDS = ['bench-run-a', 'bench-run-b'];
const ROWS_PER_FILE = 20_000;
const PER_VERSION = 50_000;

/** Writes the data set the way the sink lays it out: per run, hour and topic partition, in offset ranges. */
async function generateStore(storeDir: string): Promise<void> {
  const marker = join(storeDir, 'generated.json');
  const spec = JSON.stringify({ trajectories: TRAJECTORIES_N, steps: STEPS, rowsPerFile: ROWS_PER_FILE, version: 3 });
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
  const writer = await ParquetWriter.open();
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
        await writer.writeRows(join(storeDir, 'trajectories', bucket, dataFileName({ topic: 'bench.trajectories', partition, first, last })), TRAJECTORIES, trajectories);
        const verifications = members.map((i, k) => ({ record: verificationAt(i), meta: { topic: 'bench.verifications', partition, offset: String(first + BigInt(k)) } }));
        await writer.writeRows(join(storeDir, 'verifications', bucket, dataFileName({ topic: 'bench.verifications', partition, first, last })), VERIFICATIONS, verifications);
      }
    }
    log(`  ${fmt(Math.min(TRAJECTORIES_N, from + ROWS_PER_FILE * partitions))} trajectories written`);
  }
  writer.close();
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

interface QueryFigure {
  query: string;
  layout: string;
  /** Milliseconds per round. */
  parquetMs: number[];
  tableMs: number[];
  load: number[];
}

/** Both sides once each to warm file metadata and the page cache, then --runs rounds, the sides alternating. */
async function timeQueries(parquet: (sql: string) => Promise<unknown>, table: (sql: string) => Promise<unknown>, sql: string): Promise<{ parquetMs: number[]; tableMs: number[]; load: number[]; results: [unknown, unknown] }> {
  const results: [unknown, unknown] = [await parquet(sql), await table(sql)];
  const figures = { parquetMs: [] as number[], tableMs: [] as number[], load: [] as number[] };
  for (let i = 0; i < RUNS; i++) {
    figures.load.push(loadAverage());
    let started = performance.now();
    await parquet(sql);
    figures.parquetMs.push(performance.now() - started);
    started = performance.now();
    await table(sql);
    figures.tableMs.push(performance.now() - started);
  }
  return { ...figures, results };
}

async function duckdbFigures(storeDir: string, label: string): Promise<QueryFigure[]> {
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
    const figures: QueryFigure[] = [];
    for (const [name, sql] of Object.entries(QUERIES)) {
      const timed = await timeQueries(
        async (q) => (await catalog.query(q)).rows,
        async (q) => (await connection.runAndReadAll(q)).getRowsJson(),
        sql,
      );
      if (JSON.stringify(timed.results[0]) !== JSON.stringify(timed.results[1])) throw new Error(`${name}: the Parquet views and the tables disagree`);
      figures.push({ query: name, layout: `${label} (${files} files)`, parquetMs: timed.parquetMs, tableMs: timed.tableMs, load: timed.load });
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

/** The sink's figures as the Markdown table docs/analytics.md shows, so the page is pasted from a run, not typed. */
function sinkMarkdown(figures: SinkFigures, ratios: readonly number[]): string {
  const cell = (values: readonly number[], digits = 0): string => {
    const s = spread(values);
    return `${fmt(s.median, digits)} | ${fmt(s.min, digits)} to ${fmt(s.max, digits)}`;
  };
  const lines = [
    `${fmt(SINK_RECORDS)} trajectories of ${STEPS} steps (${fmt(figures.bytesPerRecord)} bytes each), ${RUNS} interleaved rounds, load average ${cell(figures.load, 1).replace(' | ', ' (')})`,
    '',
    '| | median | min to max |',
    '| --- | --- | --- |',
    `| sink, rows/s | ${cell(figures.sink)} |`,
    `| bare consume loop, rows/s | ${cell(figures.bare)} |`,
    `| **sink / bare** (per round) | **${cell(ratios, 3).replace(' | ', '** | ')} |`,
    `| sink, CPU µs per record (every thread of the process) | ${cell(figures.sinkCpu, 1)} |`,
    `| bare consume loop, CPU µs per record | ${cell(figures.bareCpu, 1)} |`,
    ...[...figures.stages].map(([stage, values]) => `| ${stage.trim().startsWith('of which') || stage.startsWith('  ') ? '&nbsp;&nbsp;' : ''}${stage.trim()}, µs per record | ${cell(values, 1)} |`),
  ];
  return lines.join('\n');
}

async function main(): Promise<void> {
  mkdirSync(DIR, { recursive: true });
  const report = new BenchReport('analytics', `npm run bench:analytics -- --sink-records ${SINK_RECORDS} --trajectories ${TRAJECTORIES_N} --steps ${STEPS} --runs ${RUNS}${SINK_WRITER_THREADS === 1 ? '' : ` --writer-threads ${SINK_WRITER_THREADS}`}`);
  console.log(`trialrun analytics benchmark (${RUNS} interleaved rounds per figure; ${new Date().toISOString()}, load average ${loadavg().map((l) => fmt(l, 1)).join(' ')})\n`);

  if (SINK_RECORDS > 0) {
    const figures = await sinkThroughput();
    const ratios = figures.sink.map((rate, i) => rate / figures.bare[i]!);
    console.log(`1. Kafka -> Parquet sink, ${fmt(SINK_RECORDS)} trajectories of ${STEPS} steps (${fmt(figures.bytesPerRecord)} bytes each on the topic), ${RUNS} interleaved rounds`);
    console.log(`   load average (1 min) at each round    ${showSpread(spread(figures.load), 1)}`);
    console.log(`   rows/s, median (min to max)`);
    console.log(`   sink (decode, validate, Parquet, commit) ${showSpread(spread(figures.sink))}`);
    console.log(`   bare consume loop (count only)        ${showSpread(spread(figures.bare))}`);
    console.log(`   sink / bare, per round                ${showSpread(spread(ratios), 3)}`);
    console.log(`   CPU microseconds per record (every thread of the process: JavaScript, Kafka client, DuckDB)`);
    console.log(`   sink                                  ${showSpread(spread(figures.sinkCpu), 1)}`);
    console.log(`   bare consume loop                     ${showSpread(spread(figures.bareCpu), 1)}`);
    console.log(`   microseconds per record, median (min to max)`);
    for (const [stage, values] of figures.stages) console.log(`   ${stage.padEnd(40)} ${showSpread(spread(values), 1)}`);
    console.log('');
    console.log(sinkMarkdown(figures, ratios));
    report.compare({ metric: `sink, Kafka -> Parquet, ${fmt(SINK_RECORDS)} trajectories of ${STEPS} steps`, unit: 'rows/s', ours: figures.sink, baseline: figures.bare, baselineName: 'bare consume loop', higherIsBetter: true, goal: '>= 0.5x' });
    report.compare({ metric: `sink CPU per record (all threads), ${fmt(SINK_RECORDS)} trajectories of ${STEPS} steps`, unit: 'CPU µs/record', ours: figures.sinkCpu, baseline: figures.bareCpu, baselineName: 'bare consume loop', higherIsBetter: false });
    // The ceiling: DuckDB alone turning the same records' lines into Parquet, no Kafka, no check, measured in the same rounds.
    const duckdbAlone = figures.stages.get(PARQUET_FROM_LINES)!.map((microseconds) => 1e6 / microseconds);
    report.compare({ metric: `DuckDB alone, the same ${fmt(SINK_RECORDS)} records' lines -> Parquet (the ceiling of a sink through DuckDB)`, unit: 'rows/s', ours: duckdbAlone, baseline: figures.bare, baselineName: 'bare consume loop', higherIsBetter: true });
    const duckdbAllCores = figures.stages.get(PARQUET_FROM_LINES_ALL_CORES)!.map((microseconds) => 1e6 / microseconds);
    report.compare({ metric: `DuckDB alone on every core (${ALL_CORES} threads), the same records' lines -> Parquet (no sink through DuckDB beats it here)`, unit: 'rows/s', ours: duckdbAllCores, baseline: figures.bare, baselineName: 'bare consume loop', higherIsBetter: true });
  }
  if (TRAJECTORIES_N === 0) {
    report.save();
    return;
  }

  const storeDir = join(DIR, `store-${TRAJECTORIES_N}x${STEPS}`);
  await generateStore(storeDir);
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
    const ratios = f.parquetMs.map((ms, i) => ms / f.tableMs[i]!);
    console.log(`   ${f.query} / ${f.layout}, ms median (min to max), load ${showSpread(spread(f.load), 1)}`);
    console.log(`     Parquet views ${showSpread(spread(f.parquetMs))}   DuckDB tables ${showSpread(spread(f.tableMs))}   ratio ${showSpread(spread(ratios), 2)}`);
    report.compare({ metric: `${f.query}, ${fmt(TRAJECTORIES_N)} trajectories, Parquet ${f.layout}`, unit: 'ms', ours: f.parquetMs, baseline: f.tableMs, baselineName: 'same query on DuckDB tables', higherIsBetter: false });
  }
  report.save();
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench:analytics failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
