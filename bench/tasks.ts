/**
 * Task data job benchmark: `npm run bench:tasks [-- --rows 200000 --small 20000 --publish 20000 --rounds 3 --rss-rows 1000000 --dir /tmp/trialrun-bench-tasks]`.
 *
 * On a generated data set of program-repair rows (bench/repair-rows.ts; written under --dir at run time, reused by
 * later runs; about 1 KB a row, with invalid rows, exact, layout-only, renamed and commented copies, and eval rows
 * that copy train rows mixed in), every
 * figure stands beside a baseline measured in the same run, both sides interleaved over --rounds rounds
 * (bench/harness.ts: min / median / max, load average at start and end):
 *   1. rows per second of each stage and of the whole job (dry run), against DuckDB's own
 *      `read_json` -> Parquet copy of the same file;
 *   2. near-duplicate detection (`deduplicate`: exact + MinHash/LSH near-duplicates + contamination) on the
 *      first --small rows (median of 3 runs) and on all --rows rows, in the same process: CPU cost per row at
 *      both sizes, whose ratio says how close to linear the cost grows;
 *   3. tasks published per second (one transaction, registry encoding, the topic read first for what is
 *      already there) against a bare producer loop sending the same encoded payloads;
 *   4. the job's own peak resident memory and CPU seconds: one dry run in a fresh process (this script
 *      with --job-alone), so neither DuckDB's copy nor the other measurements count, at --rows and at
 *      each size of --rss-rows (comma-separated, generated like the rest; 0 skips). It runs as a job over
 *      a data set too large to hold does: keepTasks false, each task written to a file as it is built.
 * Needs the stack (Kafka, registry) for part 3; `--publish 0` skips it.
 */
import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { createReadStream, createWriteStream, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { bucketOf, dataFileName, REWARDS, writeParquetRows } from '../connectors/analytics/index.js';
import { catalogTopics, createKafka, ensureTopics } from '../connectors/kafka/index.js';
import { TopicSerde } from '../connectors/registry/index.js';
import { deduplicate, formatReport, publishNewTasks, resolveJob, runTaskJob, type TaskJobReport } from '../pipelines/jobs/task-job/index.js';
import { seededRandom } from '../policies/index.js';
import { topicNames, type Reward, type Task } from '../schemas/index.js';
import { benchArgs, BenchReport, interleave } from './harness.js';
import { generatedLine, type GeneratedRow } from './repair-rows.js';

const execFileAsync = promisify(execFile);

const cli = benchArgs(
  'bench:tasks',
  'npm run bench:tasks [-- --rows 200000 --small 20000 --publish 20000 --rounds 3 --rss-rows 1000000 --dir /tmp/trialrun-bench-tasks]',
  {
    rows: { type: 'string', default: '200000' },
    small: { type: 'string', default: '20000' },
    publish: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '3' },
    'rss-rows': { type: 'string', default: '0' },
    /** Internal: run one dry run of the job over this file, print its figures as JSON, and exit. */
    'job-alone': { type: 'string' },
    dir: { type: 'string', default: '/tmp/trialrun-bench-tasks' },
    /** TaskJobOptions.checkThreads of every job run. @default the job's own */
    'check-threads': { type: 'string' },
  },
  { help: { 'job-alone': 'internal: one dry run of the job over this file, figures as JSON', 'rss-rows': 'comma-separated sizes for the RSS part (0 skips)', 'check-threads': "TaskJobOptions.checkThreads of every job run (default: the job's own)" } },
);
const { values } = cli;
const count = (name: 'rows' | 'small' | 'publish' | 'rounds', min: number): number => cli.int(name, min);
const ROWS = count('rows', 1000);
const SMALL = count('small', 1000);
const PUBLISH = Math.min(count('publish', 0), ROWS);
const DIR = values.dir;
const ROUNDS = count('rounds', 3);
const CHECK_THREADS = cli.optionalInt('check-threads', 0);
const RSS_ROWS = values['rss-rows']!.split(',').map((size) => {
  const rows = Number(size);
  if (!Number.isInteger(rows) || rows < 0) cli.fail(`--rss-rows takes whole numbers >= 0, comma-separated, got ${values['rss-rows']}`);
  return rows;
}).filter((rows) => rows > 0);
if (SMALL > ROWS) cli.fail(`--small (${SMALL}) must not exceed --rows (${ROWS})`);
// Bump when the generator changes, so a cached file from an older generator is not reused.
const GENERATOR = 'v2';

// --- the data set (bench/repair-rows.ts) -----------------------------------------------------------------

const prng = (seed: number): (() => number) => seededRandom(String(seed));

async function generate(rows: number): Promise<string> {
  const file = join(DIR, `repair-rows-${GENERATOR}-${rows}.jsonl`);
  if (existsSync(file)) return file;
  const started = performance.now();
  const partial = `${file}.partial`;
  const out = createWriteStream(partial);
  let buffer = '';
  for (let i = 0; i < rows; i++) {
    buffer += `${generatedLine(i)}\n`;
    if (buffer.length > 1 << 22) {
      if (!out.write(buffer)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
      buffer = '';
    }
  }
  await new Promise<void>((resolve, reject) => out.end(buffer, () => resolve()).on('error', reject));
  renameSync(partial, file);
  console.log(`generated ${rows} rows in ${((performance.now() - started) / 1000).toFixed(1)} s: ${file}`);
  return file;
}

/** Rewards for the first tenth of the rows, so the curriculum stage reads real pass rates. */
async function writeRewards(analyticsDir: string, rows: number): Promise<void> {
  const random = prng(99);
  const records: Array<{ record: Reward; meta: { topic: string; partition: number; offset: string } }> = [];
  const createdAt = '2025-01-01T00:00:00.000Z';
  for (let i = 0; i < rows / 10; i++) {
    const taskId = `gen-${i}`;
    const rate = random();
    for (let attempt = 0; attempt < 4; attempt++) {
      const id = `${taskId}/${attempt}`;
      records.push({
        record: { rewardId: id, trajectoryId: id, verificationId: id, groupId: taskId, reward: random() < rate ? 1 : 0, advantage: 0, groupMean: 0, groupStd: 0, groupSize: 4, lineage: { taskId, attempt, runId: 'bench', policyVersion: 0, sandboxImageDigest: null, verifierVersion: null, createdAt } },
        meta: { topic: 'bench.rewards', partition: 0, offset: String(records.length) },
      });
    }
  }
  await writeParquetRows(join(analyticsDir, 'rewards', bucketOf('bench', createdAt), dataFileName({ topic: 'bench.rewards', partition: 0, first: 0n, last: BigInt(records.length - 1) })), REWARDS, records);
}

// --- measurements ---------------------------------------------------------------------------------------

async function duckdbCopy(file: string): Promise<number> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  const target = join(DIR, `baseline-${randomUUID()}.parquet`);
  try {
    const started = performance.now();
    // ignore_errors: the data set holds broken lines on purpose; DuckDB would stop at the first.
    await connection.run(`COPY (SELECT * FROM read_json('${file}', format = 'newline_delimited', ignore_errors = true)) TO '${target}' (FORMAT parquet)`);
    return (performance.now() - started) / 1000;
  } finally {
    connection.closeSync();
    instance.closeSync();
    rmSync(target, { force: true });
  }
}

const jobFor = (file: string): ReturnType<typeof resolveJob> =>
  resolveJob({ name: 'bench-tasks', sources: [{ path: file }], importer: 'repair-rows' }, DIR);

const median = (values: readonly number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Wall and CPU seconds of `deduplicate` over rows, median of `runs` runs. */
function timeDedup(rows: readonly GeneratedRow[], runs: number): { wall: number; cpu: number; near: number } {
  const walls: number[] = [];
  const cpus: number[] = [];
  let near = 0;
  for (let run = 0; run < runs; run++) {
    const cpu = process.cpuUsage();
    const started = performance.now();
    const result = deduplicate(
      rows,
      (row) => ({ id: row.id, family: row.id, split: row.split, priority: row.priority }),
      (row) => ({ prose: [row.description], code: [row.buggy_source, row.visible_tests, row.hidden_tests] }),
      { threshold: 0.8 },
    );
    walls.push((performance.now() - started) / 1000);
    const used = process.cpuUsage(cpu);
    cpus.push((used.user + used.system) / 1e6);
    near = result.nearDuplicates;
  }
  return { wall: median(walls), cpu: median(cpus), near };
}

/** The parseable rows of the data set, as the job's read stage sees them. */
async function loadRows(file: string): Promise<GeneratedRow[]> {
  const rows: GeneratedRow[] = [];
  for await (const line of createInterface({ input: createReadStream(file) })) {
    try {
      const row = JSON.parse(line) as GeneratedRow;
      if (typeof row.id === 'string' && typeof row.buggy_source === 'string') rows.push(row);
    } catch {
      // The data set's broken lines: the job rejects them before dedup too.
    }
  }
  return rows;
}

async function dryRun(file: string, analyticsDir: string): Promise<TaskJobReport> {
  return runTaskJob({ job: jobFor(file), rejectsDir: join(DIR, 'rejects'), analyticsDir, dryRun: true, checkThreads: CHECK_THREADS });
}

/** Tasks per second of each side, one fresh topic per run: the job's publish, and a bare producer loop. */
async function publishSides(tasks: readonly Task[]): Promise<{ job: () => Promise<number>; bare: () => Promise<number>; close: () => Promise<void> }> {
  const kafka = createKafka({ clientId: 'bench-tasks' });
  const admin = kafka.admin();
  await admin.connect();
  const created: string[] = [];
  const freshTopic = async (side: string) => {
    const names = topicNames(`bench-tasks-${side}-${randomUUID().slice(0, 8)}.`);
    await ensureTopics(admin, catalogTopics(names, ['tasks']));
    created.push(names.name('tasks'));
    const serde = new TopicSerde(names);
    await serde.register(['tasks']);
    return { names, serde };
  };
  // The bare side sends the same payloads, encoded beforehand, so it pays only the producer's work.
  const { serde } = await freshTopic('encode');
  const payloads: Array<{ key: string; value: Buffer }> = [];
  for (const task of tasks) payloads.push({ key: task.taskId, value: await serde.encode('tasks', task) });
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  return {
    job: async () => {
      const { names, serde: jobSerde } = await freshTopic('job');
      const started = performance.now();
      await publishNewTasks(kafka, jobSerde, names, tasks, { transactionalId: `${names.prefix}bench`, transactionTimeoutMs: 900_000 });
      return tasks.length / ((performance.now() - started) / 1000);
    },
    bare: async () => {
      const { names } = await freshTopic('bare');
      const started = performance.now();
      // Requests cut as the job cuts them (2000 records or 900 kB), so both sides pay the same round trips.
      let batch: typeof payloads = [];
      let bytes = 0;
      for (const payload of payloads) {
        if (batch.length >= 2000 || (batch.length > 0 && bytes + payload.value.length > 900_000)) {
          await producer.send({ topic: names.name('tasks'), messages: batch });
          batch = [];
          bytes = 0;
        }
        batch.push(payload);
        bytes += payload.value.length + payload.key.length;
      }
      if (batch.length > 0) await producer.send({ topic: names.name('tasks'), messages: batch });
      return tasks.length / ((performance.now() - started) / 1000);
    },
    close: async () => {
      await producer.disconnect();
      await admin.deleteTopics(created).catch(() => undefined);
      await admin.disconnect();
    },
  };
}

/** What one dry run of the job costs on its own, measured in the process that ran it. */
interface JobAlone {
  readonly rows: number;
  readonly seconds: number;
  readonly cpuSeconds: number;
  readonly peakRssMiB: number;
  readonly stages: ReadonlyArray<{ stage: string; rowsIn: number; seconds: number }>;
}

/** The child side of --job-alone: one dry run, its figures as one JSON line on stdout. */
async function jobAlone(file: string, rows: number): Promise<void> {
  const cpu = process.cpuUsage();
  // As a job over a data set too large to hold as tasks runs: each task written to a file as it is built.
  const tasksFile = join(DIR, `tasks-alone-${rows}.jsonl`);
  const report = await runTaskJob({ job: jobFor(file), rejectsDir: join(DIR, 'rejects'), dryRun: true, keepTasks: false, tasksFile, tempDir: DIR, checkThreads: CHECK_THREADS });
  rmSync(tasksFile, { force: true });
  const used = process.cpuUsage(cpu);
  const figures: JobAlone = {
    rows,
    seconds: report.seconds,
    cpuSeconds: (used.user + used.system) / 1e6,
    peakRssMiB: process.resourceUsage().maxRSS / 1024,
    stages: report.stages.map((stage) => ({ stage: stage.stage, rowsIn: stage.rowsIn, seconds: stage.seconds })),
  };
  process.stdout.write(`${JSON.stringify(figures)}\n`);
}

/** Runs the job alone in a fresh process over a generated file of `rows` rows. */
async function measureJobAlone(rows: number): Promise<JobAlone> {
  const file = await generate(rows);
  const { stdout } = await execFileAsync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--job-alone', file, '--rows', String(rows), '--small', String(Math.min(rows, SMALL)), '--dir', DIR, ...(CHECK_THREADS === undefined ? [] : ['--check-threads', String(CHECK_THREADS)])], { maxBuffer: 1 << 24 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as JobAlone;
}

const mib = (value: number): string => `${Math.round(value).toLocaleString('en-US')} MiB (${(value / 1024).toFixed(2)} GiB)`;

const rate = (rows: number, seconds: number): string => `${Math.round(rows / seconds).toLocaleString('en-US')} rows/s`;

async function main(): Promise<void> {
  mkdirSync(DIR, { recursive: true });
  const report = new BenchReport('tasks', `npm run bench:tasks -- --rows ${ROWS} --small ${SMALL} --publish ${PUBLISH} --rounds ${ROUNDS}`);
  const bigFile = await generate(ROWS);
  const analyticsDir = join(DIR, `analytics-${ROWS}`);
  if (!existsSync(join(analyticsDir, 'rewards'))) await writeRewards(analyticsDir, ROWS);
  const lines: string[] = [];
  lines.push(`data set: ${ROWS.toLocaleString('en-US')} rows (${bigFile})`);

  // 1. The whole job against DuckDB's own copy of the same file, interleaved; stages from the last job run.
  let last: TaskJobReport | null = null;
  // CPU microseconds per row of each side, every thread of the process (DuckDB's included): on a busy machine
  // wall time says how much CPU the others left, CPU time what each side costs.
  const cpu = { job: [] as number[], duckdb: [] as number[] };
  const cpuPerRow = async <T>(side: keyof typeof cpu, work: () => Promise<T>): Promise<T> => {
    const start = process.cpuUsage();
    const result = await work();
    const used = process.cpuUsage(start);
    cpu[side].push((used.user + used.system) / ROWS);
    return result;
  };
  const rates = await interleave(
    {
      job: async () => {
        last = await cpuPerRow('job', () => dryRun(bigFile, analyticsDir));
        return ROWS / last.seconds;
      },
      duckdb: async () => ROWS / (await cpuPerRow('duckdb', () => duckdbCopy(bigFile))),
    },
    { rounds: ROUNDS, warmup: 0, onRound: (round, r) => console.log(`round ${round}: job ${rate(ROWS, ROWS / r.job!)} (${cpu.job.at(-1)!.toFixed(1)} CPU µs/row), DuckDB copy ${rate(ROWS, ROWS / r.duckdb!)} (${cpu.duckdb.at(-1)!.toFixed(1)} CPU µs/row)`) },
  );
  const big = last as TaskJobReport | null;
  if (!big) throw new Error('the task job never ran');
  console.log(formatReport(big));
  console.log('');
  const baselineRate = rates.duckdb.reduce((a, b) => a + b, 0) / rates.duckdb.length;
  lines.push('stage (last job run)   rows in     seconds        rows/s  vs mean DuckDB copy');
  for (const stage of big.stages) {
    const perSecond = stage.rowsIn / stage.seconds;
    lines.push(`${stage.stage.padEnd(22)}${String(stage.rowsIn).padStart(8)}  ${stage.seconds.toFixed(2).padStart(9)}  ${Math.round(perSecond).toLocaleString('en-US').padStart(12)}  ${(perSecond / baselineRate).toFixed(2)}x`);
  }
  lines.push(`found: ${big.exactDuplicates} exact and ${big.nearDuplicates} near duplicates, ${big.contaminationHits} contamination hits`);
  lines.push(`peak resident memory so far: ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`);
  report.compare({ metric: `task job (dry run), ${ROWS.toLocaleString('en-US')} rows`, unit: 'rows/s', ours: rates.job, baseline: rates.duckdb, baselineName: 'DuckDB read_json -> Parquet copy', higherIsBetter: true, goal: '>= 0.3x' });
  report.compare({ metric: `task job (dry run) CPU per row (all threads), ${ROWS.toLocaleString('en-US')} rows`, unit: 'CPU µs/row', ours: cpu.job, baseline: cpu.duckdb, baselineName: 'DuckDB read_json -> Parquet copy', higherIsBetter: false });
  const toPublish = big.tasks.slice(0, PUBLISH);
  last = null; // let the tasks go before the next measurements

  // 2. Near-duplicate detection at two sizes, in one process.
  const rows = await loadRows(bigFile);
  const small = timeDedup(rows.slice(0, SMALL), 3);
  const all = timeDedup(rows, 1); // long enough to average the machine's noise on its own
  const perRow = (seconds: number, n: number): number => (seconds / n) * 1e6;
  const smallCount = Math.min(SMALL, rows.length);
  lines.push(
    `near-dup (deduplicate; the small set median of 3 runs): ${smallCount.toLocaleString('en-US')} rows ${small.wall.toFixed(2)} s wall / ${small.cpu.toFixed(2)} s CPU ` +
      `(${perRow(small.cpu, smallCount).toFixed(1)} us CPU/row); ${rows.length.toLocaleString('en-US')} rows ${all.wall.toFixed(2)} s wall / ${all.cpu.toFixed(2)} s CPU ` +
      `(${perRow(all.cpu, rows.length).toFixed(1)} us CPU/row): per-row cost ratio ${(perRow(all.cpu, rows.length) / perRow(small.cpu, smallCount)).toFixed(2)} (1.00 = linear)`,
  );
  rows.length = 0;

  // 3. Publishing against a bare producer loop, interleaved, a fresh topic each run.
  if (PUBLISH > 0) {
    const sides = await publishSides(toPublish);
    try {
      const published = await interleave({ job: sides.job, bare: sides.bare }, { rounds: ROUNDS, warmup: 0 });
      report.compare({ metric: `tasks published, ${toPublish.length.toLocaleString('en-US')} a round (one transaction)`, unit: 'tasks/s', ours: published.job, baseline: published.bare, baselineName: 'bare producer loop, same payloads', higherIsBetter: true });
    } finally {
      await sides.close();
    }
  }
  lines.push(`peak resident memory of this process (the job, DuckDB's copies, the dedup runs): ${mib(process.resourceUsage().maxRSS / 1024)}`);

  // 4. The job alone, each size in a fresh process: its own peak memory, CPU and per-stage rows/s.
  lines.push('the job alone (dry run, a fresh process per size)');
  lines.push('     rows   wall s    CPU s   rows/s (wall)  peak RSS        per stage, rows/s (wall)');
  for (const rows of [ROWS, ...RSS_ROWS]) {
    const alone = await measureJobAlone(rows);
    const stages = alone.stages.map((stage) => `${stage.stage} ${Math.round(stage.rowsIn / stage.seconds).toLocaleString('en-US')}`).join(', ');
    const line = `${rows.toLocaleString('en-US').padStart(9)}  ${alone.seconds.toFixed(1).padStart(7)}  ${alone.cpuSeconds.toFixed(1).padStart(7)}  ${Math.round(rows / alone.seconds).toLocaleString('en-US').padStart(13)}  ${mib(alone.peakRssMiB).padEnd(22)} ${stages}`;
    process.stderr.write(`# job alone: ${line.trim()}\n`);
    lines.push(line);
  }
  console.log(lines.join('\n'));
  report.save();
}

if (values['job-alone'] !== undefined) await jobAlone(values['job-alone'], ROWS);
else await main();
