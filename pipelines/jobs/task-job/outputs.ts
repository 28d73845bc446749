import type { RejectsFile } from '../../../connectors/files/index.js';
import { locationChild, outputFile, type OutputFile } from '../../../connectors/storage/index.js';
import { errorMessage } from '../../../schemas/index.js';

/** A job's output files: the rejects file and any others it was asked for, each local or put on S3 when the job ends. */
export interface JobOutputs {
  readonly rejects: OutputFile;
  readonly tasks: OutputFile | null;
  readonly rows: OutputFile | null;
  /** Checks every s3:// destination's bucket (a ConfigError naming the option), before the job starts. */
  check(): Promise<void>;
  /** Hands every finished file to its destination. */
  publish(): Promise<void>;
  /**
   * After the job failed part-way: the rejects file, as far as the job got, still goes to its destination (the rows
   * turned away before the failure are what a user fixing them needs; a local file is already where it belongs). The
   * tasks and rows files, incomplete, do not. Says on `progress` where the rejects are, or why they could not be put
   * there: the job's own error is the one its caller throws.
   */
  publishRejectsOfFailedJob(rejects: RejectsFile, progress: (line: string) => void): Promise<void>;
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
    publishRejectsOfFailedJob: async (file, progress) => {
      file.close();
      try {
        progress(`the job failed; its ${file.count} reject(s) so far are in ${await rejects.publish()}`);
      } catch (error) {
        progress(`the job failed, and its ${file.count} reject(s) so far could not be put at ${rejects.destination}: ${errorMessage(error)}`);
      }
    },
    close: () => {
      for (const file of all) file.close();
    },
  };
}
