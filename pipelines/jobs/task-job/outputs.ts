import { locationChild, outputFile, type OutputFile } from '../../../connectors/storage/index.js';

/** A job's output files: the rejects file and any others it was asked for, each local or put on S3 when the job ends. */
export interface JobOutputs {
  readonly rejects: OutputFile;
  readonly tasks: OutputFile | null;
  readonly rows: OutputFile | null;
  /** Checks every s3:// destination's bucket (a ConfigError naming the option), before the job starts. */
  check(): Promise<void>;
  /** Hands every finished file to its destination. */
  publish(): Promise<void>;
  close(): void;
}

export function jobOutputs(rejectsDir: string, jobRunId: string, files: { tasksFile?: string; rowsFile?: string } = {}): JobOutputs {
  const rejects = outputFile(locationChild(rejectsDir, `${jobRunId}.jsonl`), 'the rejects location (TRIALRUN_REJECTS, TaskJobOptions.rejectsDir)');
  const tasks = files.tasksFile === undefined ? null : outputFile(files.tasksFile, 'the tasks file (TaskJobOptions.tasksFile)');
  const rows = files.rowsFile === undefined ? null : outputFile(files.rowsFile, 'the rows file (--out, TaskJobOptions.rowsFile)');
  const all = [rejects, tasks, rows].filter((file): file is OutputFile => file !== null);
  return {
    rejects,
    tasks,
    rows,
    check: async () => {
      for (const file of all) await file.check();
    },
    publish: async () => {
      for (const file of all) await file.publish();
    },
    close: () => {
      for (const file of all) file.close();
    },
  };
}
