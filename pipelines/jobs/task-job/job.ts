import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { RejectsFile } from '../../../connectors/files/index.js';
import type { SandboxPool } from '../../../connectors/sandbox/index.js';
import { ConfigError, wholeNumber, type Task } from '../../../schemas/index.js';
import type { ProcessorContext } from '../../runtime/index.js';
import type { BucketCounts } from './difficulty.js';
import { jobOutputs } from './outputs.js';
import { brokerBoundedPublish, publishNewTasks } from './publish.js';
import type { RepairTaskRow } from './rows.js';
import { resolveJob, type ResolvedJob } from './spec.js';
import { buildTasks, convertTests, dedupRows, deriveTasks, planTasks, readSources, spilledTaskRows, taskRowsOf, ValidatedRows, type DerivationReport, type DuplicateRecord, type JobRun, type StageReport, type TaskRows } from './stages/index.js';

export type { DerivationReport, DuplicateRecord, KindSurvival, StageReport } from './stages/index.js';

export interface TaskJobOptions {
  /** The checked job (`loadJobFile` or `resolveJob`). */
  job: ResolvedJob;
  /** Where the rejects file `<rejectsDir>/<jobRunId>.jsonl` goes: a folder, or `s3://bucket/prefix` (put there when the job ends). */
  rejectsDir: string;
  /** Analytics store (Parquet folders) whose rewards give observed pass rates. @default none: every task starts cold */
  analyticsDir?: string;
  /** Identifies this run in every task's lineage. @default a random UUID */
  jobRunId?: string;
  /** Run every stage but publish nothing; no Kafka needed. @default false */
  dryRun?: boolean;
  /** Kafka, registry and topic names; required unless dryRun. @default none */
  context?: ProcessorContext;
  /** Sandboxes for repair-task derivation; required when the job derives tasks. @default none */
  pool?: SandboxPool;
  /** Image tag of a sandbox recipe (`imageFor` of stack/). Required with pool. @default none */
  imageFor?: (recipe: string) => string;
  /** Progress lines for a terminal (derivation and publishing take a while). @default none */
  onProgress?: (line: string) => void;
  /**
   * Keep the selected tasks in the report (`tasks`, `rows`). False bounds the job's memory on data sets
   * too large to hold as tasks (write them with tasksFile or rowsFile instead); it needs dryRun, since
   * publishing sends the batch from memory in one transaction. @default true
   */
  keepTasks?: boolean;
  /** Write each selected task as a JSON line to this file (a path, or `s3://bucket/key`, put when the job ends) as it is built. @default none */
  tasksFile?: string;
  /** Write each selected task's repair row (a rows file that reproduces the tasks) to this file (a path or `s3://bucket/key`) as it is built. @default none */
  rowsFile?: string;
  /** Folder for the job's spill files (the valid rows' text, their signatures), removed when the job ends. @default the system's temporary folder */
  tempDir?: string;
  /**
   * Worker threads that check rows (zod, filters, fingerprints, signatures) while the job reads on; 0
   * checks every row in the job's own thread. Jobs of up to 10,000 rows never start them.
   * @default one per core, at most 2
   */
  checkThreads?: number;
}

export interface TaskJobReport {
  readonly jobRunId: string;
  readonly dataset: string;
  readonly datasetHash: string;
  readonly dryRun: boolean;
  readonly stages: readonly StageReport[];
  readonly rowsRead: number;
  /** Rows (or derived mutants) not published, written to rejectsFile with source, row and reason. */
  readonly rejected: number;
  readonly exactDuplicates: number;
  readonly nearDuplicates: number;
  readonly contaminationHits: number;
  /** Every row dedup dropped, with the row it duplicates, in the order dedup met them. */
  readonly duplicates: readonly DuplicateRecord[];
  readonly derivation: DerivationReport | null;
  readonly buckets: readonly BucketCounts[];
  readonly coldStart: number;
  readonly parked: number;
  readonly deferred: number;
  /** Null on a dry run. */
  readonly publish: { readonly topic: string; readonly added: number; readonly updated: number; readonly unchanged: number } | null;
  /** Where the rejects went: a path, or the object's URI. */
  readonly rejectsFile: string;
  /** How many tasks the job selected (published, or would publish on a dry run). */
  readonly taskCount: number;
  /** The tasks the job selected; empty when keepTasks is false. */
  readonly tasks: readonly Task[];
  /**
   * The same tasks as finished repair rows with their family, split and priority: written to a file
   * (`trialrun tasks publish --out`), they are a rows file that reproduces the tasks without deriving again.
   */
  readonly rows: readonly RepairTaskRow[];
  readonly seconds: number;
}

/**
 * A task data job: read the sources, map and validate every row (rejects go to a rejects file with source,
 * row and reason), normalise, drop exact and near duplicates and train rows that contaminate the eval
 * split, derive validated repair tasks from solution rows, estimate difficulty from observed pass rates,
 * park tasks without learning signal, pick the target mix per difficulty bucket, and publish the batch in
 * one transaction without re-publishing what the topic already holds.
 */
export async function runTaskJob(options: TaskJobOptions): Promise<TaskJobReport> {
  const started = performance.now();
  const dryRun = options.dryRun ?? false;
  if (!dryRun && !options.context) throw new ConfigError('TaskJobOptions.context is required unless dryRun is set');
  // The largest task record is what the tasks topic takes, as the broker says.
  const given = options.job;
  const job: typeof given = { ...given, spec: { ...given.spec, publish: await brokerBoundedPublish(given.spec.publish, dryRun ? undefined : options.context) } };
  const { spec } = job;
  if (spec.derive && !(options.pool && options.imageFor)) throw new ConfigError(`job ${spec.name} derives repair tasks: TaskJobOptions.pool and imageFor are required`);
  const checkThreads = options.checkThreads ?? Math.min(2, availableParallelism());
  wholeNumber('TaskJobOptions.checkThreads', checkThreads, { min: 0 });
  const keepTasks = options.keepTasks ?? true;
  if (!keepTasks && !dryRun) throw new ConfigError('TaskJobOptions.keepTasks: false needs dryRun: publishing sends the selected tasks from memory in one transaction');
  const jobRunId = options.jobRunId ?? randomUUID();
  const outputs = jobOutputs(options.rejectsDir, jobRunId, { tasksFile: options.tasksFile, rowsFile: options.rowsFile });
  // An s3:// destination that does not answer stops the job before it reads a row, not after it did all the work.
  await outputs.check().catch((error: unknown) => {
    outputs.close();
    throw error;
  });
  const rejects = new RejectsFile(outputs.rejects.path);
  const run: JobRun = { job, jobRunId, rejects, progress: options.onProgress ?? (() => undefined), stages: [] };
  const workDir = mkdtempSync(join(options.tempDir ?? tmpdir(), 'trialrun-task-job-'));
  let validated: ValidatedRows | undefined;
  try {
    const spilled = (validated = new ValidatedRows(run, workDir, checkThreads));
    // Rows stream from the read straight into validation unless their tests must be converted first (a
    // Python helper over all of them: solution rows, a data set sized by its sandboxes).
    const streams = job.mapping.kind === 'repair' || job.mapping.tests.style === 'pytest';
    const read = await readSources(run, streams ? validated : undefined);
    const { rowsRead, datasetHash } = read;
    if (!streams) await validated.accept(await convertTests(run, read.items.splice(0)));
    await validated.finish();
    const { kept, dedup, duplicates } = dedupRows(run, validated);
    let derived: TaskRows;
    let derivation: DerivationReport | null = null;
    if (spec.derive) {
      // Derivation runs in sandboxes, a few thousand problems at most: its survivors are read back into memory.
      const result = await deriveTasks(run, kept.map((index) => spilled.item(index)), options.pool!, options.imageFor!('python-repair'));
      derived = taskRowsOf(result.derived);
      derivation = result.derivation;
    } else {
      derived = job.mapping.kind === 'repair' ? spilledTaskRows(validated, kept) : taskRowsOf([]);
    }
    const plan = await planTasks(run, derived, options.analyticsDir);
    const { tasks, rows, count } = buildTasks(run, derived, plan, datasetHash, { keep: keepTasks, tasksFile: outputs.tasks?.path, rowsFile: outputs.rows?.path, tasksDestination: outputs.tasks?.destination });
    const publish = dryRun ? null : await publishStage(run, options.context!, tasks);
    rejects.close();
    await outputs.publish();
    return {
      jobRunId,
      dataset: spec.name,
      datasetHash,
      dryRun,
      stages: run.stages,
      rowsRead,
      rejected: rejects.count,
      exactDuplicates: dedup.exactDuplicates,
      nearDuplicates: dedup.nearDuplicates,
      contaminationHits: dedup.contaminationHits,
      duplicates,
      derivation,
      buckets: plan.histogram,
      coldStart: plan.coldStart,
      parked: plan.estimates.filter((estimate) => estimate.parked).length,
      deferred: plan.deferred.length,
      publish,
      rejectsFile: outputs.rejects.destination,
      taskCount: count,
      tasks,
      rows,
      seconds: (performance.now() - started) / 1000,
    };
  } catch (error) {
    await outputs.publishRejectsOfFailedJob(rejects, run.progress);
    throw error;
  } finally {
    rejects.close();
    outputs.close();
    validated?.close();
    rmSync(workDir, { recursive: true, force: true });
  }
}

/** publish: what is new or changed, in one transaction. */
async function publishStage(run: JobRun, context: ProcessorContext, tasks: readonly Task[]): Promise<NonNullable<TaskJobReport['publish']>> {
  const { spec } = run.job;
  const started = performance.now();
  run.progress(`publishing ${tasks.length} task(s) to ${context.names.name('tasks')}`);
  const published = await publishNewTasks(context.kafka, context.serde, context.names, tasks, {
    transactionalId: `${context.names.prefix}task-job.${spec.name}`,
    transactionTimeoutMs: spec.publish.transactionTimeoutMs,
    batchSize: spec.publish.batchSize,
    requestBytes: spec.publish.requestBytes,
    onProgress: (sent, total) => run.progress(`sent ${sent}/${total}`),
  });
  run.stages.push({
    stage: 'publish',
    rowsIn: tasks.length,
    rowsOut: published.added + published.updated,
    seconds: (performance.now() - started) / 1000,
    rejects: {},
    notes: [`${published.added} new, ${published.updated} updated, ${published.unchanged} already published unchanged`],
  });
  return { topic: context.names.name('tasks'), ...published };
}

/** The job a plain file of bundled-format rows (`tasks/repair-bundle.jsonl`) stands for. */
export function rowsFileJob(file: string): ResolvedJob {
  const name = basename(file).toLowerCase().replace(/\.(jsonl|ndjson|json|csv|parquet)(\.gz)?$/, '').replace(/[^a-z0-9._-]+/g, '-').replace(/^[^a-z0-9]+/, '') || 'tasks';
  return resolveJob({ name, sources: [{ path: file }], importer: 'repair-rows' }, process.cwd(), `rows file ${file}`);
}

export interface PrepareOptions {
  /** A file of bundled-format repair rows. */
  file: string;
  rejectsDir: string;
  /** @default a random UUID */
  jobRunId?: string;
}

/** Every stage short of publishing over a rows file (what the in-process loop needs). */
export async function prepareTasks(options: PrepareOptions): Promise<{ jobRunId: string; rowsRead: number; rejected: number; duplicates: number; rejectsFile: string; tasks: readonly Task[] }> {
  const report = await runTaskJob({ job: rowsFileJob(options.file), rejectsDir: options.rejectsDir, jobRunId: options.jobRunId, dryRun: true });
  const duplicates = report.exactDuplicates + report.nearDuplicates;
  return { jobRunId: report.jobRunId, rowsRead: report.rowsRead, rejected: report.rejected - duplicates, duplicates, rejectsFile: report.rejectsFile, tasks: report.tasks };
}
