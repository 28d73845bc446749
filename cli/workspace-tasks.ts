import { dirname } from 'node:path';
import { WORKSPACE_ENV } from '../envs/index.js';
import { isWorkspaceJob, readStructuredFile, resolveWorkspaceJob, runWorkspaceJob } from '../pipelines/jobs/task-job/index.js';
import { ConfigError, type Task } from '../schemas/index.js';
import { treeStore } from './paths.js';

/** Whether a job file is a workspace job (`env: workspace/v1`). */
export const isWorkspaceJobFile = (file: string): boolean => /\.(ya?ml|json)$/i.test(file) && isWorkspaceJob(readStructuredFile(file, 'job file'));

/** The tasks of a workspace job file, built as `tasks publish --dry-run` builds them (large trees go to the artifact store). */
export async function workspaceJobTasks(file: string, rejectsDir: string, what = 'job file'): Promise<readonly Task[]> {
  const raw = readStructuredFile(file, 'job file');
  if (!isWorkspaceJob(raw)) throw new ConfigError(`${what} ${file} is not a workspace job file (env: ${WORKSPACE_ENV})`);
  const report = await runWorkspaceJob({ job: resolveWorkspaceJob(raw, dirname(file), `job file ${file}`), rejectsDir, trees: treeStore(), dryRun: true });
  if (report.tasks.length === 0) throw new ConfigError(`job file ${file} gave no tasks (${report.rejected} rejected; see ${report.rejectsFile})`);
  return report.tasks;
}
