import { closeSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/** Why one input row (or an item derived from it) was not published. */
export interface Reject {
  /** The file the row came from. */
  readonly source: string;
  /** 1-based line (JSON Lines) or data row (CSV, JSON, Parquet) in that file. */
  readonly row: number;
  /** The job stage that turned it away, e.g. `read`, `validate`, `dedup`. */
  readonly stage: string;
  readonly reason: string;
  /** The task id, once the row has one. */
  readonly taskId?: string;
}

/**
 * Rejects as JSON Lines, one per rejected row, so nothing is dropped silently. Writes are buffered (a
 * million-row job may reject many rows) and flushed by `flush()` and whenever the buffer fills; `close()`
 * leaves the file sorted by source and row (stages reject in their own order), each row's entries in the
 * order they were added.
 */
export class RejectsFile {
  private count_ = 0;
  private readonly byStage = new Map<string, number>();
  private buffer: string[] = [];
  private bufferedBytes = 0;
  private fd: number | null;

  constructor(readonly path: string) {
    mkdirSync(dirname(path), { recursive: true });
    this.fd = openSync(path, 'a');
  }

  get count(): number {
    return this.count_;
  }

  /** Rejects so far per stage. */
  countsByStage(): ReadonlyMap<string, number> {
    return this.byStage;
  }

  add(reject: Reject): void {
    const line = `${JSON.stringify(reject)}\n`;
    this.buffer.push(line);
    this.bufferedBytes += line.length;
    this.count_++;
    this.byStage.set(reject.stage, (this.byStage.get(reject.stage) ?? 0) + 1);
    if (this.bufferedBytes > 1 << 20) this.flush();
  }

  flush(): void {
    if (this.buffer.length === 0) return;
    if (this.fd === null) throw new Error(`rejects file ${this.path} is closed`);
    writeSync(this.fd, this.buffer.join(''));
    this.buffer = [];
    this.bufferedBytes = 0;
  }

  close(): void {
    if (this.fd === null) return;
    this.flush();
    closeSync(this.fd);
    this.fd = null;
    const lines = readFileSync(this.path, 'utf8').split('\n').filter(Boolean);
    const keyed = lines.map((line, order) => {
      const { source, row } = JSON.parse(line) as Reject;
      return { line, source, row, order };
    });
    keyed.sort((a, b) => (a.source < b.source ? -1 : a.source > b.source ? 1 : a.row - b.row || a.order - b.order));
    const sorted = `${this.path}.sorting`;
    writeFileSync(sorted, keyed.map((entry) => `${entry.line}\n`).join(''));
    renameSync(sorted, this.path);
  }
}
