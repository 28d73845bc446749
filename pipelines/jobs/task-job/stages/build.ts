import { AnalyticsCatalog } from '../../../../connectors/analytics/index.js';
import { PROGRAM_REPAIR_ENV } from '../../../../envs/index.js';
import { describeIssues, nowIso, Task } from '../../../../schemas/index.js';
import { observedPassRates, planCurriculum, type Curriculum, type Observed } from '../difficulty.js';
import type { RepairItem } from '../row-check.js';
import type { RepairTaskRow } from '../rows.js';
import { JsonLinesWriter } from '../spill.js';
import { Stage, type JobRun } from './stage.js';
import type { TaskEntry, ValidatedRows } from './validate.js';

/** Bytes of a task record besides its texts: field names, ids, lineage; generous on purpose. */
const RECORD_OVERHEAD_BYTES = 4096;

/** Bytes of JSON Lines held before they are written out. */
const OUTPUT_BUFFER_BYTES = 4 << 20;

/** The tasks the curriculum plans and build builds, by index: in memory (derived tasks) or read back from the spill file. */
export interface TaskRows {
  readonly length: number;
  entry(index: number): TaskEntry;
  item(index: number): RepairItem;
}

export function taskRowsOf(items: readonly RepairItem[]): TaskRows {
  return {
    length: items.length,
    entry: (index) => {
      const item = items[index]!;
      return { id: item.task.id, tag: item.task.tags[0], priority: item.priority };
    },
    item: (index) => items[index]!,
  };
}

/** The rows dedup kept, read back from the spill file as build needs them. */
export function spilledTaskRows(rows: ValidatedRows, kept: readonly number[]): TaskRows {
  return { length: kept.length, entry: (index) => rows.entry(kept[index]!), item: (index) => rows.item(kept[index]!) as RepairItem };
}

/** curriculum: observed pass rates -> Beta-smoothed difficulty -> parking -> buckets -> target mix. */
export async function planTasks(run: JobRun, tasksToBuild: TaskRows, analyticsDir: string | undefined): Promise<Curriculum> {
  const { job, rejects } = run;
  const { spec } = job;
  const curriculumStage = new Stage('curriculum', tasksToBuild.length);
  let observed = new Map<string, Observed>();
  if (analyticsDir) {
    const catalog = await AnalyticsCatalog.open(analyticsDir);
    try {
      observed = await observedPassRates(catalog, spec.difficulty.passReward);
    } finally {
      catalog.close();
    }
    curriculumStage.notes.push(`pass rates of ${observed.size} task(s) from ${analyticsDir}`);
  } else {
    curriculumStage.notes.push('no analytics store: every task starts from the cold-start estimate');
  }
  const plan = planCurriculum(
    { length: tasksToBuild.length, at: (index) => tasksToBuild.entry(index) },
    observed,
    {
      priorStrength: spec.difficulty.priorStrength,
      defaultPassRate: spec.difficulty.defaultPassRate,
      minTagSamples: spec.difficulty.minTagSamples,
      buckets: spec.difficulty.buckets,
      mix: spec.difficulty.mix,
      total: spec.difficulty.total,
      park: spec.difficulty.park,
    },
  );
  plan.estimates.forEach((estimate, index) => {
    if (!estimate.parked) return;
    const item = tasksToBuild.item(index);
    curriculumStage.count('parked: no learning signal');
    rejects.add({ source: item.source, row: item.row, stage: 'curriculum', reason: `parked: ${estimate.parked}`, taskId: item.task.id });
  });
  for (const { index, reason } of plan.deferred) {
    const item = tasksToBuild.item(index);
    curriculumStage.count('deferred by the target mix');
    rejects.add({ source: item.source, row: item.row, stage: 'curriculum', reason, taskId: item.task.id });
  }
  curriculumStage.notes.push(`${plan.coldStart} task(s) never observed (cold start)`);
  run.stages.push(curriculumStage.end(plan.selected.length));
  return plan;
}

/** build: the Task records, with lineage; a record too large for the broker is rejected here, not mid-transaction. */
export function buildTasks(run: JobRun, tasksToBuild: TaskRows, plan: Curriculum, datasetHash: string, output: TaskOutput): { tasks: Task[]; rows: RepairTaskRow[]; count: number } {
  const { job, rejects, jobRunId } = run;
  const { spec } = job;
  const build = new Stage('build', plan.selected.length);
  const tasks: Task[] = [];
  const rows: RepairTaskRow[] = [];
  let count = 0;
  const tasksFile = output.tasksFile === undefined ? null : new JsonLinesWriter(output.tasksFile, OUTPUT_BUFFER_BYTES);
  const rowsFile = output.rowsFile === undefined ? null : new JsonLinesWriter(output.rowsFile, OUTPUT_BUFFER_BYTES);
  const createdAt = nowIso();
  try {
  for (const index of plan.selected) {
    const item = tasksToBuild.item(index);
    const estimate = plan.estimates[index]!;
    const row = item.task;
    const parsed = Task.safeParse({
      taskId: row.id,
      envId: PROGRAM_REPAIR_ENV,
      title: row.title,
      description: row.description,
      files: { [row.module]: row.buggy_source },
      visibleTests: { 'test_visible.py': row.visible_tests },
      hiddenTests: { 'test_hidden.py': row.hidden_tests },
      referenceSolution: { [row.module]: row.fixed_source },
      tags: row.tags,
      priority: item.priority + (spec.priority.byBucket[estimate.bucket] ?? 0),
      split: item.split,
      difficulty: Math.round(estimate.difficulty * 1e4) / 1e4,
      source: { dataset: spec.name, datasetHash, jobRunId, sourceRow: item.row },
      lineage: { taskId: row.id, attempt: 0, runId: jobRunId, policyVersion: null, sandboxImageDigest: null, verifierVersion: null, createdAt },
    });
    if (!parsed.success) {
      build.count('invalid task');
      rejects.add({ source: item.source, row: item.row, stage: 'build', reason: describeIssues(parsed.error).join('; '), taskId: row.id });
      continue;
    }
    // The registry's wire format is 5 bytes and the JSON; the broker refuses a record over its size limit.
    // JSON spends at most 6 bytes on a UTF-16 unit (\uXXXX), so most tasks are shown small without serialising them.
    const textUnits = row.id.length * 2 + spec.name.length + row.title.length + row.description.length + row.module.length * 2 + row.buggy_source.length + row.fixed_source.length + row.visible_tests.length + row.hidden_tests.length + row.tags.join('').length;
    const recordBytes = 6 * textUnits + RECORD_OVERHEAD_BYTES <= spec.publish.maxRecordBytes ? 0 : 5 + Buffer.byteLength(JSON.stringify(parsed.data));
    if (recordBytes > spec.publish.maxRecordBytes) {
      build.count('record too large');
      rejects.add({ source: item.source, row: item.row, stage: 'build', reason: `the task record would be ${recordBytes} bytes, over publish.maxRecordBytes (${spec.publish.maxRecordBytes})`, taskId: row.id });
      continue;
    }
    const built = { ...row, family: item.family, split: item.split, priority: item.priority };
    count++;
    tasksFile?.add(parsed.data);
    rowsFile?.add(built);
    if (output.keep) {
      tasks.push(parsed.data);
      rows.push(built);
    }
  }
  } finally {
    tasksFile?.close();
    rowsFile?.close();
  }
  if (output.tasksFile !== undefined) build.notes.push(`tasks written to ${output.tasksDestination ?? output.tasksFile}`);
  run.stages.push(build.end(count));
  return { tasks, rows, count };
}

/** Where build puts the tasks it builds. */
export interface TaskOutput {
  /** Keep them in memory (the report's `tasks` and `rows`). */
  readonly keep: boolean;
  /** Write each task as a JSON line here as it is built. */
  readonly tasksFile?: string;
  /** Write each task's repair row (family, split, priority included) as a JSON line here as it is built. */
  readonly rowsFile?: string;
  /** Where tasksFile ends up, for the report (an object it is put to when the job ends). @default tasksFile */
  readonly tasksDestination?: string;
}
