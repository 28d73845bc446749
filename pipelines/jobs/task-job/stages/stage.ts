import type { RejectsFile } from '../../../../connectors/files/index.js';
import type { ResolvedJob } from '../spec.js';

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

/** What every stage works with: the job, where rejects go, and where progress lines go. */
export interface JobRun {
  readonly job: ResolvedJob;
  readonly jobRunId: string;
  readonly rejects: RejectsFile;
  readonly progress: (line: string) => void;
  readonly stages: StageReport[];
}

/** One stage's clock and reject counts, ended into its StageReport. */
export class Stage {
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
