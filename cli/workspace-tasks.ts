import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DockerSandboxPool } from '../connectors/sandbox/index.js';
import { isWorkspaceJob, JOB_ENVS, readStructuredFile, readTree, resolveWorkspaceJob, runWorkspaceJob, type HarborHooks, type TaskJobReport, type WorkspaceJobOptions } from '../pipelines/jobs/task-job/index.js';
import { ConfigError, type Task } from '../schemas/index.js';
import { ensureTaskImage, extractImageWorkdir, imageFor, taskImagePlan } from '../stack/index.js';
import { treeStore } from './paths.js';

/** The largest starting file a Harbor task's image may hold in /workspace (as for its tests and solution). */
const HARBOR_MAX_FILE_BYTES = 1024 * 1024;

/** Whether a job file lists an environment's tasks (`env: workspace/v1` or `single-turn/v1`). */
export const isWorkspaceJobFile = (file: string): boolean => /\.(ya?ml|json)$/i.test(file) && isWorkspaceJob(readStructuredFile(file, 'job file'));

/**
 * Runs a workspace job with what a Harbor job needs from the stack: task images built FROM the trialrun recipes
 * (never rebuilt when unchanged) and sandboxes for solve.sh, from a pool of its own unless one is given.
 */
export async function runWorkspaceJobWithStack(options: Omit<WorkspaceJobOptions, 'harbor'>, pool?: DockerSandboxPool): Promise<TaskJobReport> {
  if (options.job.spec.format !== 'harbor') return runWorkspaceJob(options);
  const own = pool ?? new DockerSandboxPool();
  const log = (line: string): void => void process.stderr.write(`[tasks] ${line}\n`);
  const harbor: HarborHooks = {
    buildImage: (environmentDir, taskId) => ensureTaskImage(taskImagePlan(environmentDir, taskId), { log }),
    imageFiles: async (image) => {
      const scratch = await mkdtemp(join(tmpdir(), 'trialrun-image-workdir-'));
      try {
        await extractImageWorkdir(image, scratch);
        return await readTree({ folder: scratch }, { maxFileBytes: HARBOR_MAX_FILE_BYTES });
      } finally {
        await rm(scratch, { recursive: true, force: true });
      }
    },
    pool: own,
    imageFor,
    runId: options.jobRunId ?? `task-job-${randomUUID()}`,
  };
  try {
    return await runWorkspaceJob({ ...options, harbor });
  } finally {
    if (own !== pool) await own.close();
  }
}

/** The tasks of a workspace job file, built as `tasks publish --dry-run` builds them (large trees go to the artifact store). */
export async function workspaceJobTasks(file: string, rejectsDir: string, what = 'job file', pool?: DockerSandboxPool): Promise<readonly Task[]> {
  const raw = readStructuredFile(file, 'job file');
  if (!isWorkspaceJob(raw)) throw new ConfigError(`${what} ${file} is not a job file of an environment's tasks (env: ${JOB_ENVS.join(' or ')})`);
  const report = await runWorkspaceJobWithStack({ job: resolveWorkspaceJob(raw, dirname(file), `job file ${file}`), rejectsDir, trees: treeStore(), dryRun: true }, pool);
  if (report.tasks.length === 0) throw new ConfigError(`job file ${file} gave no tasks (${report.rejected} rejected; see ${report.rejectsFile})`);
  return report.tasks;
}
