import { join } from 'node:path';
import { LocalTreeStore, type TreeStore } from '../../connectors/artifacts/index.js';
import { repoRoot } from '../../cli/paths.js';
import { readStructuredFile, resolveWorkspaceJob, runWorkspaceJob } from '../../pipelines/jobs/task-job/index.js';
import type { Task } from '../../schemas/index.js';
import { tempDir } from './harness.js';

export const WORKSPACE_MINI_JOB = (): string => join(repoRoot(), 'tasks', 'workspace-mini', 'job.yaml');

/** The workspace-mini tasks as the task job builds them (a dry run: nothing published), with the store it used. */
export async function workspaceMiniTasks(trees: TreeStore = new LocalTreeStore(tempDir('ws-trees'))): Promise<Task[]> {
  const file = WORKSPACE_MINI_JOB();
  const job = resolveWorkspaceJob(readStructuredFile(file, 'job file'), join(repoRoot(), 'tasks', 'workspace-mini'));
  const report = await runWorkspaceJob({ job, rejectsDir: tempDir('ws-rejects'), trees, dryRun: true });
  if (report.rejected > 0) throw new Error(`workspace-mini: ${report.rejected} task(s) rejected; see ${report.rejectsFile}`);
  return [...report.tasks];
}

/** The first `count` tasks of a bundled single-turn family (tasks/single-turn/<family>.yaml), built as the task job builds them. */
export async function singleTurnTasks(family: 'python-expressions' | 'json-documents', count: number): Promise<Task[]> {
  const folder = join(repoRoot(), 'tasks', 'single-turn');
  const raw = readStructuredFile(join(folder, `${family}.yaml`), 'job file') as { generate: Array<Record<string, unknown>> };
  const job = resolveWorkspaceJob({ ...raw, generate: raw.generate.map((source) => ({ ...source, count })) }, folder);
  const report = await runWorkspaceJob({ job, rejectsDir: tempDir('single-turn-rejects'), trees: new LocalTreeStore(tempDir('single-turn-trees')), dryRun: true });
  if (report.rejected > 0) throw new Error(`${family}: ${report.rejected} task(s) rejected; see ${report.rejectsFile}`);
  return [...report.tasks];
}
