import { join } from 'node:path';
import { DedupColumns, FileSignatures } from '../columns.js';
import { IdTable } from '../id-table.js';
import { RowCheckPool } from '../check-pool.js';
import { rowCheckSettings, RowChecker, type CheckedRow, type MappedItem, type RowCheckSettings, type ValidItem } from '../row-check.js';
import { SpillFile } from '../spill.js';
import { Stage, type JobRun } from './stage.js';

/** What the curriculum needs of a task to build: its id, first tag and priority. */
export interface TaskEntry {
  readonly id: string;
  readonly tag: string | undefined;
  readonly priority: number;
}

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
