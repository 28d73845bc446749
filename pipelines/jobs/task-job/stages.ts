import { join } from 'node:path';
import { AnalyticsCatalog } from '../../../connectors/analytics/index.js';
import { hashFiles, type RejectsFile, TabularFiles, type SourceFormat } from '../../../connectors/files/index.js';
import type { SandboxPool } from '../../../connectors/sandbox/index.js';
import { PROGRAM_REPAIR_ENV } from '../../../envs/index.js';
import { ConfigError, describeIssues, errorMessage, nowIso, Task } from '../../../schemas/index.js';
import { DedupColumns, FileSignatures } from './columns.js';
import { IdTable } from './id-table.js';
import { deduplicateColumns, type DedupCategory, type DedupResult, type Split } from './dedup.js';
import { deriveMutants, mutantId, type MutantStatus } from './derive.js';
import { observedPassRates, planCurriculum, type Curriculum, type Observed } from './difficulty.js';
import { runHelperLines } from './python.js';
import { RowCheckPool } from './check-pool.js';
import { rowCheckSettings, RowChecker, type CheckedRow, type MappedItem, type RowCheckSettings, type RepairItem, type SolutionItem, type ValidItem } from './row-check.js';
import { RowMapper, type RepairTaskRow } from './rows.js';
import { MUTATION_KINDS, type ResolvedJob } from './spec.js';
import { JsonLinesWriter, SpillFile } from './spill.js';

/** What one stage did. */
export interface StageReport {
  readonly stage: string;
  readonly rowsIn: number;
  readonly rowsOut: number;
  readonly seconds: number;
  /** Rows this stage turned away, by reason category. */
  readonly rejects: Readonly<Record<string, number>>;
  /** Anything else worth a line, e.g. `3 files`. */
  readonly notes: readonly string[];
}

export interface KindSurvival {
  readonly tried: number;
  readonly valid: number;
  readonly equivalent: number;
  readonly flaky: number;
  readonly slow: number;
}

export interface DerivationReport {
  readonly problems: number;
  readonly problemsRejected: number;
  readonly candidates: number;
  readonly byKind: Readonly<Record<string, KindSurvival>>;
}

/** What every stage works with: the job, where rejects go, and where progress lines go. */
export interface JobRun {
  readonly job: ResolvedJob;
  readonly jobRunId: string;
  readonly rejects: RejectsFile;
  readonly progress: (line: string) => void;
  readonly stages: StageReport[];
}

/** One row dropped by dedup, and the row it duplicates: what `--dry-run` lists. */
export interface DuplicateRecord {
  readonly category: DedupCategory;
  readonly source: string;
  readonly row: number;
  readonly taskId: string;
  /** The row that stays (for contamination: the one across the split). */
  readonly of: { readonly source: string; readonly row: number; readonly taskId: string };
  /** Estimated similarity of their token shingles; 1 for exact duplicates. */
  readonly similarity: number;
}

class Stage {
  private readonly started = performance.now();
  readonly rejects: Record<string, number> = {};
  readonly notes: string[] = [];

  constructor(
    readonly name: string,
    readonly rowsIn: number,
  ) {}

  count(category: string): void {
    this.rejects[category] = (this.rejects[category] ?? 0) + 1;
  }

  /** Work done inside another stage's loop (mapping happens as rows are read) is timed here and moved over. */
  private lentSeconds = 0;
  private ownSeconds = 0;

  time<T>(work: () => T): T {
    const started = performance.now();
    try {
      return work();
    } finally {
      this.ownSeconds += (performance.now() - started) / 1000;
    }
  }

  async timeAsync<T>(work: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await work();
    } finally {
      this.ownSeconds += (performance.now() - started) / 1000;
    }
  }

  lend(other: Stage): void {
    this.lentSeconds += other.ownSeconds;
  }

  end(rowsOut: number, rowsIn = this.rowsIn): StageReport {
    const seconds = this.ownSeconds > 0 ? this.ownSeconds : (performance.now() - this.started) / 1000 - this.lentSeconds;
    return { stage: this.name, rowsIn, rowsOut, seconds, rejects: this.rejects, notes: this.notes };
  }
}

/** Bytes of a task record besides its texts: field names, ids, lineage; generous on purpose. */
const RECORD_OVERHEAD_BYTES = 4096;

const DERIVED_DESCRIPTION = (module: string, specification: string): string =>
  `\`${module}\` should implement the specification below, but one single-site slip (a wrong operator, constant, bound, ` +
  `argument order or return value) breaks it. Fix it with a minimal change so the code behaves as specified; ` +
  `\`test_visible.py\` has some of the tests it must pass.\n\n${specification}`;

/**
 * Maps one row; anything the mapping throws on a row's content becomes that row's reject, never the job's
 * end (rows reaching here are already bounded in size and depth by the read stage).
 */
function mapRow(mapper: RowMapper, value: Readonly<Record<string, unknown>>): ReturnType<RowMapper['map']> {
  try {
    return mapper.map(value);
  } catch (error) {
    return { ok: false, reason: `cannot be mapped: ${errorMessage(error).slice(0, 500)}` };
  }
}

/** read + map: every row of every source through DuckDB, then the column mapping; each batch to `validated` when given (nothing is collected), else into `items`. */
export async function readSources(run: JobRun, validated?: ValidatedRows): Promise<{ items: MappedItem[]; rowsRead: number; datasetHash: string }> {
  const { job, rejects } = run;
  const { spec, mapping } = job;
  const mapper = new RowMapper(mapping);
  const required = mapper.requiredColumns();
  const read = new Stage('read', 0);
  const mapStage = new Stage('map', 0);
  const items: MappedItem[] = [];
  let rowsRead = 0;
  let delivered = 0;
  let mapped_ = 0;
  const files: Array<{ file: string; format?: SourceFormat }> = [];
  const tables = await TabularFiles.open();
  try {
    for (const source of job.sources) for (const file of await tables.expand(source.path)) files.push({ file, format: source.format });
    for (const { file, format } of files) {
      const columns = await tables.columns(file, format);
      if (columns) {
        const missing = [...required].filter(([column]) => !columns.includes(column));
        if (missing.length > 0) {
          throw new ConfigError(`${file} lacks column(s) the mapping needs: ${missing.map(([column, field]) => `"${column}" (${field})`).join(', ')}; its columns are: ${columns.join(', ')}`);
        }
      }
      const report = await tables.readRows(file, {
        format,
        maxRowBytes: spec.limits.maxRowBytes,
        maxRowDepth: spec.limits.maxRowDepth,
        onReject: ({ row, reason }) => {
          read.count(reason.startsWith('not valid JSON') ? 'not valid JSON' : reason.replace(/[:(].*$/, '').trim());
          rejects.add({ source: file, row, stage: 'read', reason });
        },
        onRows: async (rows) => {
          const batch = validated ? [] : items;
          mapStage.time(() => {
            delivered += rows.length;
            for (const { row, value } of rows) {
              const mapped = mapRow(mapper, value);
              if (!mapped.ok) {
                mapStage.count(mapped.reason.replace(/"[^"]*"/, '<column>'));
                rejects.add({ source: file, row, stage: 'map', reason: `${mapped.reason} (mapping of ${spec.importer ? `importer ${spec.importer}` : 'the job'})` });
                continue;
              }
              mapped_++;
              batch.push({ source: file, row, fields: mapped.fields, tests: mapped.tests });
            }
          });
          await validated?.accept(batch);
        },
      });
      rowsRead += report.rows + report.rejects;
    }
  } finally {
    tables.close();
  }
  read.notes.push(`${files.length} file(s)`);
  read.lend(mapStage);
  if (validated) read.lend(validated.stage);
  run.stages.push(read.end(delivered, rowsRead));
  run.stages.push(mapStage.end(mapped_, delivered));
  const datasetHash = await hashFiles(files.map((f) => f.file));
  return { items, rowsRead, datasetHash };
}

/** tests: assert-style tests (HumanEval's check function, assert lists) become visible and hidden pytest files. */
export async function convertTests(run: JobRun, items: readonly MappedItem[]): Promise<readonly MappedItem[]> {
  const { rejects } = run;
  if (!items.some((item) => item.tests)) return items;
  const testsStage = new Stage('tests', items.length);
  const pending = items.filter((item) => item.tests);
  const answers = await runHelperLines<Record<string, unknown>, { key: number; error?: string; visible_tests?: string; hidden_tests?: string }>(
    'split_tests.py',
    pending.map((item, key) => ({ key, module: item.fields.module, ...item.tests })),
    { onCrash: (request, reason) => ({ key: request.key as number, error: reason }) },
  );
  const failed = new Set<MappedItem>();
  for (const answer of answers) {
    const item = pending[answer.key]!;
    if (answer.error) {
      failed.add(item);
      testsStage.count(answer.error.replace(/\d+/g, 'N').slice(0, 60));
      rejects.add({ source: item.source, row: item.row, stage: 'tests', reason: `tests cannot be converted: ${answer.error}`, taskId: String(item.fields.id) });
      continue;
    }
    item.fields.visible_tests = answer.visible_tests;
    item.fields.hidden_tests = answer.hidden_tests;
  }
  const kept = items.filter((item) => !failed.has(item));
  run.stages.push(testsStage.end(kept.length));
  return kept;
}

/** Bytes of JSON Lines held before they are written out. */
const OUTPUT_BUFFER_BYTES = 4 << 20;

/**
 * validate: zod on every row, the job's filters and unique ids; then normalisation and split assignment.
 * Rows come in batches as they are read. What a row needs no other row for (RowChecker) runs in worker
 * threads once the job is past its first IN_THREAD_ROWS rows, while this thread reads on; what depends on
 * the rows before it (ids already used, limits.maxRows) is decided here, in row order, so the result is the
 * same whatever the threads. Each valid row is written to a spill file in the job's folder and keeps in
 * memory only what dedup and the curriculum need (`DedupColumns`, its id and first tag), so memory grows by
 * a few hundred bytes a row, not by the row's text.
 */
export class ValidatedRows {
  readonly stage: Stage;
  readonly columns: DedupColumns;
  private readonly spill: SpillFile<ValidItem>;
  /** Id of each valid row, by index, and the first valid row with each id. */
  readonly ids = new IdTable();
  private readonly firstTags: Array<string | undefined> = [];
  private readonly tagNames = new Map<string, string>();
  private readonly settings: RowCheckSettings;
  private readonly checker: RowChecker;
  private pool: RowCheckPool | null = null;
  /** Batches sent to the pool, oldest first, with their answers to come. */
  private readonly inFlight: Array<{ items: readonly MappedItem[]; checked: Promise<readonly CheckedRow[]> }> = [];
  private accepted = 0;
  /** Rows checked by the pool's workers. */
  private checkedInWorkers = 0;
  private beyondLimit = 0;
  private rowsIn = 0;
  private readonly splits = { train: 0, eval: 0 };

  constructor(
    private readonly run: JobRun,
    dir: string,
    /** Worker threads checking rows; 0 checks them all in this thread. */
    private readonly threads: number,
  ) {
    const { spec } = run.job;
    this.stage = new Stage('validate', 0);
    this.settings = rowCheckSettings(spec, run.job.mapping.kind);
    this.checker = new RowChecker(this.settings);
    this.columns = new DedupColumns(spec.dedup.signatureSize, new FileSignatures(join(dir, 'signatures.bin'), spec.dedup.signatureSize));
    this.spill = new SpillFile(join(dir, 'rows.jsonl'));
  }

  get count(): number {
    return this.spill.count;
  }

  /** Valid row `index`, read back from the spill file. */
  item(index: number): ValidItem {
    return this.spill.read(index);
  }

  /** What the curriculum needs of valid row `index`, without reading it back. */
  entry(index: number): TaskEntry {
    return { id: this.ids.at(index), tag: this.firstTags[index], priority: this.columns.priority(index) };
  }

  /** Takes the next batch of rows; resolves once the batches in flight are few enough to take another. */
  async accept(items: readonly MappedItem[]): Promise<void> {
    this.accepted += items.length;
    // Past limits.maxRows only rows whose ids are already used are kept: zod and the filters, in this
    // thread, tell them apart without the rest of the checks.
    if (this.full()) await this.drain();
    if (this.pool === null && (this.threads === 0 || this.accepted <= IN_THREAD_ROWS || this.full())) {
      this.stage.time(() => {
        for (const item of items) this.admit(item, this.checker.checkWanted(item, this.wanted));
      });
      return;
    }
    this.pool ??= new RowCheckPool(this.settings, this.threads);
    this.checkedInWorkers += items.length;
    const checked = this.pool.check(items);
    // Awaited in order by admitOldest; a failure meanwhile must not go unhandled.
    checked.catch(() => undefined);
    this.inFlight.push({ items, checked });
    while (this.inFlight.length > this.threads * BATCHES_IN_FLIGHT_PER_THREAD) await this.admitOldest();
  }

  /** The stage's report; call once every row is in. */
  async finish(): Promise<void> {
    await this.drain();
    const { stage } = this;
    if (this.beyondLimit > 0) stage.notes.push(`${this.beyondLimit} valid row(s) beyond limits.maxRows not used`);
    stage.notes.push(`split: ${this.splits.train} train, ${this.splits.eval} eval`);
    if (this.checkedInWorkers > 0) stage.notes.push(`checked in ${this.threads} worker thread(s) past the first ${IN_THREAD_ROWS} rows`);
    this.run.stages.push(stage.end(this.count, this.rowsIn));
  }

  close(): void {
    void this.pool?.close();
    this.spill.close();
    this.columns.close();
  }

  /** Whether limits.maxRows distinct ids are in: a row with a new id is not used from here on. */
  private full(): boolean {
    const { maxRows } = this.run.job.spec.limits;
    return maxRows !== undefined && this.ids.distinct >= maxRows;
  }

  /** Whether a row with this id would be used, as far as limits.maxRows says (see checkWanted). */
  private readonly wanted = (id: string): boolean => !this.full() || this.ids.first(id) !== undefined;

  /** Admits every batch in flight and stops the workers. */
  private async drain(): Promise<void> {
    while (this.inFlight.length > 0) await this.admitOldest();
    await this.pool?.close();
    this.pool = null;
  }

  /** Waits for the oldest batch in flight (the wait counts as the stage's time: this thread has nothing else to do) and admits it. */
  private async admitOldest(): Promise<void> {
    const { items, checked } = this.inFlight.shift()!;
    const rows = await this.stage.timeAsync(() => checked);
    this.stage.time(() => {
      for (let index = 0; index < items.length; index++) this.admit(items[index]!, rows[index]!);
    });
  }

  /**
   * What depends on the rows before this one: its id against the ids used, limits.maxRows; then it is
   * kept. `checked` is null for a row checkWanted left unchecked past the limit.
   */
  private admit(item: MappedItem, checked: CheckedRow | null): void {
    this.rowsIn++;
    if (checked === null) {
      this.beyondLimit++;
      return;
    }
    const fail = (category: string, reason: string): void => {
      this.stage.count(category);
      this.run.rejects.add({ source: item.source, row: item.row, stage: 'validate', reason, taskId: typeof item.fields.id === 'string' ? item.fields.id : undefined });
    };
    if (!checked.valid) {
      fail(checked.category, checked.reason);
      return;
    }
    const first = this.ids.first(checked.id);
    if (first === undefined && this.full()) {
      this.beyondLimit++;
      return;
    }
    // A second copy of a row is an exact duplicate, which dedup reports; a different row under a used id is a conflict.
    if (first !== undefined && !this.columns.hasContent(first, checked.digest)) {
      fail('duplicate id', `task id ${checked.id} is already used by row ${this.spill.read(first).row}, with different content`);
      return;
    }
    this.spill.addLine(checked.line);
    this.columns.add(checked, checked.digest, checked.kept);
    this.ids.add(checked.id);
    const { firstTag } = checked;
    let interned = firstTag === undefined ? undefined : this.tagNames.get(firstTag);
    if (firstTag !== undefined && interned === undefined) this.tagNames.set(firstTag, (interned = firstTag));
    this.firstTags.push(interned);
    this.splits[checked.split]++;
  }
}

/** Rows checked in the job's own thread before workers start: a job this small never pays a worker's start (about 0.1 s). */
const IN_THREAD_ROWS = 10_000;
/** Batches in flight per worker: enough that none waits for the next, few enough that memory stays bounded. */
const BATCHES_IN_FLIGHT_PER_THREAD = 2;

/** dedup: exact duplicates, near-duplicates and eval contamination, over whatever the rows are (problems before derivation), from their columns. */
export function dedupRows(run: JobRun, rows: ValidatedRows): { kept: number[]; dedup: DedupResult; duplicates: DuplicateRecord[] } {
  const { job, rejects } = run;
  const { spec } = job;
  const dedupStage = new Stage('dedup', rows.count);
  const dedup = deduplicateColumns(rows.columns, (index) => rows.ids.at(index), {
    threshold: spec.dedup.nearDuplicateThreshold,
    shingleTokens: spec.dedup.shingleTokens,
    signatureSize: spec.dedup.signatureSize,
    contamination: spec.dedup.contamination,
  });
  const duplicates = dedup.rejects.map((reject): DuplicateRecord => {
    const item = rows.item(reject.index);
    const other = rows.item(reject.of);
    dedupStage.count(reject.category);
    rejects.add({ source: item.source, row: item.row, stage: 'dedup', reason: reject.reason, taskId: rows.ids.at(reject.index) });
    return { category: reject.category, source: item.source, row: item.row, taskId: rows.ids.at(reject.index), of: { source: other.source, row: other.row, taskId: rows.ids.at(reject.of) }, similarity: reject.similarity };
  });
  dedupStage.notes.push(`${dedup.exactDuplicates} exact and ${dedup.nearDuplicates} near duplicate(s), ${dedup.contaminationHits} contamination hit(s)`);
  run.stages.push(dedupStage.end(dedup.kept.length));
  return { kept: dedup.kept, dedup, duplicates };
}

/** What the curriculum needs of a task to build: its id, first tag and priority. */
export interface TaskEntry {
  readonly id: string;
  readonly tag: string | undefined;
  readonly priority: number;
}

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

/** derive: validated single-site mutants of each solution become repair tasks. */
export async function deriveTasks(run: JobRun, survivors: readonly ValidItem[], pool: SandboxPool, image: string): Promise<{ derived: RepairItem[]; derivation: DerivationReport }> {
  const { job, rejects, progress, jobRunId } = run;
  const { spec } = job;
  const derive = spec.derive!;
  const problems = survivors.filter((item): item is SolutionItem => 'solution' in item);
  const deriveStage = new Stage('derive', problems.length);
  const byKind: Record<string, KindSurvival> = Object.fromEntries(derive.kinds.map((kind) => [kind, { tried: 0, valid: 0, equivalent: 0, flaky: 0, slow: 0 }]));
  progress(`deriving repair tasks from ${problems.length} problem(s) in ${derive.sandboxes} sandbox(es)`);
  const results = await deriveMutants(
    problems.map((item) => ({ key: item.solution.id, module: item.solution.module, source: item.solution.source, visibleTests: item.solution.visible_tests, hiddenTests: item.solution.hidden_tests })),
    {
      pool,
      image,
      runId: jobRunId,
      kinds: derive.kinds,
      perProblem: derive.perProblem,
      maxCandidates: derive.maxCandidates,
      runs: derive.runs,
      timeoutMs: derive.timeoutMs,
      sandboxes: derive.sandboxes,
      problemsPerSandbox: derive.problemsPerSandbox,
      seed: derive.seed,
      onProgress: (done, total) => progress(`derived ${done}/${total} problem(s)`),
    },
  );
  const byKey = new Map(problems.map((item) => [item.solution.id, item]));
  let candidatesTotal = 0;
  let problemsRejected = 0;
  const derived: RepairItem[] = [];
  for (const result of results) {
    const problem = byKey.get(result.key)!;
    candidatesTotal += result.candidates;
    if (result.status === 'rejected') {
      problemsRejected++;
      deriveStage.count(`problem: ${result.reason!.split(':')[0]!.replace(/\d+/g, 'N')}`);
      rejects.add({ source: problem.source, row: problem.row, stage: 'derive', reason: `no tasks derived: ${result.reason}`, taskId: problem.solution.id });
      continue;
    }
    if (result.mutants.length === 0) {
      deriveStage.count('problem: no candidate edits');
      rejects.add({ source: problem.source, row: problem.row, stage: 'derive', reason: `no tasks derived: the edit tool lists no edit of the kinds ${derive.kinds.join(', ')}`, taskId: problem.solution.id });
    }
    for (const mutant of result.mutants) {
      const survival = byKind[mutant.edit.kind] as { -readonly [K in keyof KindSurvival]: number };
      survival.tried++;
      survival[mutant.status satisfies MutantStatus]++;
      const id = mutantId(problem.solution.id, mutant.edit);
      if (mutant.status !== 'valid') {
        deriveStage.count(`mutant ${mutant.status}`);
        rejects.add({ source: problem.source, row: problem.row, stage: 'derive', reason: `${mutant.edit.kind} mutant at line ${mutant.edit.line} (${mutant.edit.before} -> ${mutant.edit.after}) rejected: ${mutant.reason}`, taskId: id });
        continue;
      }
      const solution = problem.solution;
      derived.push({
        source: problem.source,
        row: problem.row,
        family: problem.family,
        split: problem.split,
        priority: problem.priority,
        task: {
          id,
          title: `Repair ${solution.title}`,
          description: DERIVED_DESCRIPTION(solution.module, solution.description),
          module: solution.module,
          buggy_source: mutant.source,
          fixed_source: solution.source,
          visible_tests: solution.visible_tests,
          hidden_tests: solution.hidden_tests,
          tags: [mutant.edit.kind, ...solution.tags.filter((tag) => !(MUTATION_KINDS as readonly string[]).includes(tag)), mutant.failedVisible.length > 0 ? 'visible-tests-catch' : 'hidden-tests-only'],
          priority: problem.priority,
          split: problem.split,
          family: problem.family,
        },
      });
    }
  }
  const derivation: DerivationReport = { problems: problems.length, problemsRejected, candidates: candidatesTotal, byKind };
  deriveStage.notes.push(
    `survivors by kind: ${Object.entries(byKind)
      .filter(([, s]) => s.tried > 0)
      .map(([kind, s]) => `${kind} ${s.valid}/${s.tried}`)
      .join(', ')}`,
  );
  run.stages.push(deriveStage.end(derived.length));
  return { derived, derivation };
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
