import { createHash, randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { storeLargeTrees, type TreeStore } from '../../../connectors/artifacts/index.js';
import { RejectsFile } from '../../../connectors/files/index.js';
import { checkTaskPayload, ENVIRONMENTS, MAX_WORKSPACE_FILE_BYTES, SINGLE_TURN_ENV, WORKSPACE_ENV } from '../../../envs/index.js';
import { ConfigError, describeIssues, errorMessage, nowIso, Task, VerificationSpec } from '../../../schemas/index.js';
import type { ProcessorContext } from '../../runtime/index.js';
import type { StageReport, TaskJobReport } from './job.js';
import { GenerateSource, generatedTasks } from './generate/index.js';
import { jobOutputs } from './outputs.js';
import { applySolveScript, readHarborFolder, requireRewardFile, type HarborFolder, type HarborHooks } from './harbor.js';
import { brokerBoundedPublish, publishNewTasks } from './publish.js';
import { PublishSettings } from './spec.js';
import { SweRowReader, SweRowsSource } from './swe-rows.js';
import { readTree, type LocatedTask, type TaskTrees, type TreeSource } from './workspace-trees.js';

/** The environments whose tasks a job file lists, reads from folders or generates (program repair has its own job: spec.ts). */
export const JOB_ENVS = [WORKSPACE_ENV, SINGLE_TURN_ENV] as const;

const TaskId = z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, 'must be lower-case letters, digits, ".", "_" or "-"');

/** A tree as a job names it: a folder or tarball path (relative to the file naming it), or a git repository at a commit. */
const TreeRef = z.union([z.string().min(1), z.object({ git: z.string().min(1), commit: z.string().min(1) }).strict()]);

/** One workspace task, inline in the job file or as `task.json`/`task.yaml` in a task folder. */
export const WorkspaceTaskEntry = z
  .object({
    id: TaskId,
    title: z.string().min(1),
    description: z.string().min(1),
    /** What the agent starts from, its visible tests included. */
    workspace: TreeRef,
    /** Files the agent never sees, added in the grading sandbox (hidden tests, expected outputs). @default none */
    hidden: TreeRef.optional(),
    /** Files that, laid over the workspace, solve the task (for calibration). @default none */
    solution: TreeRef.optional(),
    /** @default the job's verification, else the environment's default */
    verification: VerificationSpec.optional(),
    /** Sandbox image recipe. @default the environment's */
    image: z.string().min(1).optional(),
    tags: z.array(z.string().min(1)).default([]),
    priority: z.number().int().default(0),
    split: z.enum(['train', 'eval']).default('train'),
  })
  .strict();
export type WorkspaceTaskEntry = z.infer<typeof WorkspaceTaskEntry>;

export const WorkspaceJobSpec = z
  .object({
    /** The data set's name in every task's lineage. */
    name: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, 'must be lower-case letters, digits, ".", "_" or "-"'),
    /** The environment every task of the job runs in. */
    env: z.enum(JOB_ENVS),
    /** How task folders are laid out: `trialrun` (task.json/task.yaml) or `harbor` (Harbor / Terminal-Bench: task.toml, instruction.md, tests/test.sh, ...; pipelines/jobs/task-job/harbor.ts). @default 'trialrun' */
    format: z.enum(['trialrun', 'harbor']).default('trialrun'),
    /** The sandbox image (a recipe name such as `ops`, or any image tag) of tasks that name none (a Harbor task names its own, environment/Dockerfile). @default the environment's */
    image: z.string().min(1).optional(),
    /** Tasks written out in the job file. @default none */
    tasks: z.array(WorkspaceTaskEntry).default([]),
    /** Globs of task folders (relative to the job file), each holding task.json or task.yaml (or, with format harbor, a Harbor task). @default none */
    folders: z.array(z.string().min(1)).default([]),
    /** Files of SWE-bench-style rows, one task each (see swe-rows.ts). @default none */
    sweRows: z.array(SweRowsSource).default([]),
    /** Tasks made from a family's templates (single-turn/v1; generate/index.ts). @default none */
    generate: z.array(GenerateSource).default([]),
    /** The verification of tasks that name none. @default the environment's default */
    verification: VerificationSpec.optional(),
    /**
     * trialrun's own field, for format harbor only: judge a tests/test.sh that writes no reward file by its exit
     * status (0: reward 1). Harbor reads only /logs/verifier/reward.txt or reward.json and errors such a trial,
     * so without this field such a task is rejected at job time. @default false
     */
    exitStatusReward: z.boolean().default(false),
    /** Trees larger than this (UTF-8 bytes) go to the artifact store; the record carries their digest. @default 262144 (256 KiB) */
    storeTreesAboveBytes: z.number().int().min(0).default(256 * 1024),
    publish: PublishSettings,
  })
  .strict()
  .refine((spec) => spec.tasks.length + spec.folders.length + spec.sweRows.length + spec.generate.length > 0, { message: 'give tasks or folders (or sweRows, or generate)', path: ['tasks'] })
  .refine((spec) => spec.generate.length === 0 || spec.env === SINGLE_TURN_ENV, { message: `generated families are ${SINGLE_TURN_ENV} tasks`, path: ['generate'] })
  .refine((spec) => spec.format === 'trialrun' || spec.tasks.length === 0, { message: 'a harbor job reads its tasks from folders; inline tasks are trialrun entries', path: ['tasks'] })
  .refine((spec) => spec.format === 'harbor' || !spec.exitStatusReward, { message: 'exitStatusReward is for format harbor (a Harbor test.sh that writes no reward file)', path: ['exitStatusReward'] });
export type WorkspaceJobSpec = z.infer<typeof WorkspaceJobSpec>;

export interface ResolvedWorkspaceJob {
  readonly spec: WorkspaceJobSpec;
  /** Where relative paths of the job file resolve. */
  readonly baseDir: string;
}

/** Whether a parsed job file is a workspace job (it names one of JOB_ENVS as its `env`). */
export const isWorkspaceJob = (raw: unknown): boolean => typeof raw === 'object' && raw !== null && (JOB_ENVS as readonly unknown[]).includes((raw as { env?: unknown }).env);

export function resolveWorkspaceJob(raw: unknown, baseDir: string, what = 'workspace job'): ResolvedWorkspaceJob {
  const parsed = WorkspaceJobSpec.safeParse(raw);
  if (!parsed.success) throw new ConfigError(`${what} is invalid:\n  ${describeIssues(parsed.error).join('\n  ')}`);
  return { spec: parsed.data, baseDir };
}

/** Parses a YAML or JSON file; a ConfigError names the file and what is wrong. */
export function readStructuredFile(path: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read ${what} ${path}: ${errorMessage(error)}`, { cause: error });
  }
  try {
    return /\.json$/i.test(path) ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new ConfigError(`${what} ${path} is not valid ${/\.json$/i.test(path) ? 'JSON' : 'YAML'}: ${errorMessage(error)}`, { cause: error });
  }
}

export interface WorkspaceJobOptions {
  job: ResolvedWorkspaceJob;
  /** Where the rejects file `<rejectsDir>/<jobRunId>.jsonl` goes: a folder, or `s3://bucket/prefix` (put there when the job ends). */
  rejectsDir: string;
  /** Where trees above the job's threshold go. */
  trees: TreeStore;
  /** @default a random UUID */
  jobRunId?: string;
  /** Build and store every task, publish nothing. @default false */
  dryRun?: boolean;
  /** Required unless dryRun. @default none */
  context?: ProcessorContext;
  /** Image building and solve.sh sandboxes; required by a job with format harbor. @default none */
  harbor?: HarborHooks;
  /** @default none */
  onProgress?: (line: string) => void;
}

/**
 * A workspace task job: read every task's trees (folders, tarballs, git snapshots), check each task against the
 * environment's payload schema, keep trees above the threshold in the artifact store (the record carries their
 * digest), and publish the batch in one transaction without re-publishing what the topic already holds. A task
 * that cannot be built goes to the rejects file with the reason; the others go on.
 */
export async function runWorkspaceJob(options: WorkspaceJobOptions): Promise<TaskJobReport> {
  const started = performance.now();
  const dryRun = options.dryRun ?? false;
  if (!dryRun && !options.context) throw new ConfigError('WorkspaceJobOptions.context is required unless dryRun is set');
  // The largest task record is what the tasks topic takes, as the broker says.
  const spec = { ...options.job.spec, publish: await brokerBoundedPublish(options.job.spec.publish, dryRun ? undefined : options.context) };
  const jobRunId = options.jobRunId ?? randomUUID();
  const progress = options.onProgress ?? (() => undefined);
  const outputs = jobOutputs(options.rejectsDir, jobRunId);
  await outputs.check().catch((error: unknown) => {
    outputs.close();
    throw error;
  });
  const rejects = new RejectsFile(outputs.rejects.path);
  const stages: StageReport[] = [];
  const env = ENVIRONMENTS.get(spec.env);
  if (spec.format === 'harbor' && !options.harbor) throw new ConfigError('a job with format harbor needs WorkspaceJobOptions.harbor (image building and solve.sh sandboxes)');
  const sweRows = new SweRowReader(options.job.baseDir, rejects);
  try {
    let stageStart = performance.now();
    const located = [...(await locateTasks(options.job, rejects, options.harbor)), ...(await sweRows.locate(spec.sweRows))];
    const built: Task[] = [];
    const counts: Record<string, number> = {};
    const reject = (item: LocatedTask, stage: string, category: string, reason: string): void => {
      counts[category] = (counts[category] ?? 0) + 1;
      rejects.add({ source: item.source, row: item.row, stage, reason, taskId: item.entry.id });
    };
    const origin = new Map<string, LocatedTask>();
    const hash = createHash('sha256');
    const createdAt = nowIso();
    const seen = new Set<string>();
    for (const item of located) {
      const { entry } = item;
      if (seen.has(entry.id)) {
        reject(item, 'build', 'duplicate id', `task id ${entry.id} is given twice`);
        continue;
      }
      seen.add(entry.id);
      progress(`reading ${entry.id}`);
      let trees: TaskTrees;
      try {
        trees = await item.readTrees();
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        reject(item, 'read', item.rejectAs, error.message);
        continue;
      }
      hash.update(JSON.stringify([entry.id, trees.files, trees.hidden, trees.solution, trees.image ?? null, item.limits ?? null]));
      const parsed = Task.safeParse({
        taskId: entry.id,
        envId: env.id,
        title: entry.title,
        description: entry.description,
        files: trees.files,
        visibleTests: {},
        hiddenTests: trees.hidden,
        referenceSolution: trees.solution,
        tags: entry.tags,
        priority: entry.priority,
        split: entry.split,
        difficulty: null,
        source: { dataset: spec.name, datasetHash: 'pending', jobRunId, sourceRow: item.row },
        lineage: { taskId: entry.id, attempt: 0, runId: jobRunId, policyVersion: null, sandboxImageDigest: null, verifierVersion: null, createdAt },
        verification: entry.verification ?? spec.verification ?? env.defaultVerification,
        ...((trees.image ?? entry.image ?? spec.image) ? { image: trees.image ?? entry.image ?? spec.image } : {}),
        ...(item.limits ? { limits: item.limits } : {}),
      });
      if (!parsed.success) {
        reject(item, 'build', 'invalid task', describeIssues(parsed.error).join('; '));
        continue;
      }
      try {
        checkTaskPayload(env, parsed.data);
      } catch (error) {
        reject(item, 'build', 'invalid task', errorMessage(error));
        continue;
      }
      built.push(parsed.data);
      origin.set(entry.id, item);
    }
    const datasetHash = hash.digest('hex');
    stages.push({ stage: 'read', rowsIn: located.length, rowsOut: built.length, seconds: (performance.now() - stageStart) / 1000, rejects: { ...counts }, notes: [] });

    stageStart = performance.now();
    const tasks: Task[] = [];
    let storedTrees = 0;
    for (const task of built) {
      const stored = await storeLargeTrees({ ...task, source: { ...task.source, datasetHash } }, options.trees, spec.storeTreesAboveBytes);
      const recordBytes = 5 + Buffer.byteLength(JSON.stringify(stored));
      if (recordBytes > spec.publish.maxRecordBytes) {
        reject(origin.get(task.taskId)!, 'store', 'record too large', `the record would be ${recordBytes} bytes with its large trees stored; publish.maxRecordBytes is ${spec.publish.maxRecordBytes} (lower storeTreesAboveBytes)`);
        continue;
      }
      storedTrees += Object.keys(stored.stored ?? {}).length;
      tasks.push(stored);
    }
    stages.push({ stage: 'store', rowsIn: built.length, rowsOut: tasks.length, seconds: (performance.now() - stageStart) / 1000, rejects: counts['record too large'] ? { 'record too large': counts['record too large'] } : {}, notes: [`${storedTrees} tree(s) above ${spec.storeTreesAboveBytes} bytes kept in the artifact store`] });

    let publish: TaskJobReport['publish'] = null;
    if (!dryRun) {
      stageStart = performance.now();
      const context = options.context!;
      progress(`publishing ${tasks.length} task(s) to ${context.names.name('tasks')}`);
      const published = await publishNewTasks(context.kafka, context.serde, context.names, tasks, {
        transactionalId: `${context.names.prefix}task-job.${spec.name}`,
        transactionTimeoutMs: spec.publish.transactionTimeoutMs,
        batchSize: spec.publish.batchSize,
        requestBytes: spec.publish.requestBytes,
      });
      stages.push({ stage: 'publish', rowsIn: tasks.length, rowsOut: published.added + published.updated, seconds: (performance.now() - stageStart) / 1000, rejects: {}, notes: [`${published.added} new, ${published.updated} updated, ${published.unchanged} already published unchanged`] });
      publish = { topic: context.names.name('tasks'), ...published };
    }
    rejects.close();
    await outputs.publish();
    return {
      jobRunId,
      dataset: spec.name,
      datasetHash,
      dryRun,
      stages,
      rowsRead: located.length,
      rejected: rejects.count,
      exactDuplicates: 0,
      nearDuplicates: 0,
      contaminationHits: 0,
      duplicates: [],
      derivation: null,
      buckets: [],
      coldStart: tasks.length,
      parked: 0,
      deferred: 0,
      publish,
      rejectsFile: outputs.rejects.destination,
      taskCount: tasks.length,
      tasks,
      rows: [],
      seconds: (performance.now() - started) / 1000,
    };
  } catch (error) {
    await outputs.publishRejectsOfFailedJob(rejects, progress);
    throw error;
  } finally {
    rejects.close();
    outputs.close();
    await sweRows.close();
  }
}

function treeSource(ref: z.infer<typeof TreeRef>, baseDir: string): TreeSource {
  if (typeof ref !== 'string') return { git: absolute(ref.git, baseDir), commit: ref.commit };
  const path = absolute(ref, baseDir);
  return /\.(tar|tar\.gz|tgz)$/i.test(path) ? { tarball: path } : { folder: path };
}

const absolute = (path: string, baseDir: string): string => (isAbsolute(path) ? path : resolve(baseDir, path));

/** A trialrun task entry of the job file or a task folder, its trees read from the paths it names. */
function locatedEntry(entry: WorkspaceTaskEntry, source: string, row: number, baseDir: string): LocatedTask {
  const limits = { maxFileBytes: MAX_WORKSPACE_FILE_BYTES };
  return {
    entry,
    source,
    row,
    rejectAs: 'unreadable tree',
    readTrees: async () => ({
      files: await readTree(treeSource(entry.workspace, baseDir), limits),
      hidden: entry.hidden ? await readTree(treeSource(entry.hidden, baseDir), limits) : {},
      solution: entry.solution ? await readTree(treeSource(entry.solution, baseDir), limits) : null,
    }),
  };
}

/**
 * A Harbor folder: its own image built, its starting files read out of the image's working folder, then its
 * tests run over them (they must write a reward file) and solve.sh run for the reference (the tests must write
 * one over that too).
 */
function locatedHarbor(folder: HarborFolder, hooks: HarborHooks): LocatedTask {
  return {
    entry: { id: folder.id, title: folder.title, description: folder.instruction, verification: folder.verification, tags: folder.tags, priority: 0, split: 'train' },
    source: join(folder.dir, 'task.toml'),
    row: 1,
    limits: folder.limits,
    rejectAs: 'invalid harbor task',
    readTrees: async () => {
      const image = await hooks.buildImage(folder.environmentDir, folder.id);
      const files = await hooks.imageFiles(image);
      await requireRewardFile(folder, files, image, hooks);
      const solution = folder.solution === null ? null : await applySolveScript(folder, files, image, hooks);
      return { files, hidden: folder.hidden, solution, image };
    },
  };
}

/** The job's inline tasks, then those of every task folder its globs match (sorted), each with where it came from. */
async function locateTasks(job: ResolvedWorkspaceJob, rejects: RejectsFile, harbor: HarborHooks | undefined): Promise<LocatedTask[]> {
  const located: LocatedTask[] = job.spec.tasks.map((entry, index) => locatedEntry(entry, join(job.baseDir, '(job file)'), index + 1, job.baseDir));
  job.spec.generate.forEach((source, i) => located.push(...generatedTasks(source, join(job.baseDir, `(job file: generate ${i + 1}, ${source.family})`))));
  for (const glob of job.spec.folders) {
    const folders = await matchFolders(job.baseDir, glob);
    if (folders.length === 0) throw new ConfigError(`folders: ${JSON.stringify(glob)} matches no folder under ${job.baseDir}`);
    for (const folder of folders) {
      if (job.spec.format === 'harbor') {
        try {
          located.push(locatedHarbor(await readHarborFolder(folder, { exitStatusReward: job.spec.exitStatusReward }), harbor!));
        } catch (error) {
          if (!(error instanceof ConfigError)) throw error;
          rejects.add({ source: folder, row: 1, stage: 'read', reason: error.message });
        }
        continue;
      }
      const file = ['task.json', 'task.yaml', 'task.yml'].map((name) => join(folder, name)).find((path) => existsSync(path));
      if (!file) continue;
      const parsed = WorkspaceTaskEntry.safeParse(readStructuredFile(file, 'task file'));
      if (!parsed.success) {
        rejects.add({ source: file, row: 1, stage: 'read', reason: describeIssues(parsed.error).join('; ') });
        continue;
      }
      located.push(locatedEntry(parsed.data, file, 1, folder));
    }
  }
  return located;
}

/** Folders under `baseDir` matching a one-level glob (`*`, `tasks-*`, `a/b`), sorted. */
async function matchFolders(baseDir: string, glob: string): Promise<string[]> {
  const pattern = glob.replace(/\/+$/, '');
  if (!/[*?]/.test(pattern)) return [absolute(pattern, baseDir)];
  const parent = absolute(dirname(pattern), baseDir);
  const name = new RegExp(`^${pattern.split('/').pop()!.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]')}$`);
  const entries = await readdir(parent, { withFileTypes: true }).catch(() => []);
  return entries.filter((entry) => entry.isDirectory() && name.test(entry.name)).map((entry) => join(parent, entry.name)).sort();
}
