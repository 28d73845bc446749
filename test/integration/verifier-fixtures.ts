import { join } from 'node:path';
import { repoRoot } from '../../cli/paths.js';
import { prepareTasks } from '../../pipelines/jobs/task-job/index.js';
import { NO_WORKSPACE_EXTRAS, nowIso, type Step, type Task, type Trajectory, type WorkspaceExtras } from '../../schemas/index.js';
import { tempDir } from './harness.js';

/** The first `limit` bundled repair tasks, prepared by the task job as `trialrun tasks publish` would. */
export async function bundledTasks(limit = Infinity): Promise<Task[]> {
  const prepared = await prepareTasks({ file: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'), rejectsDir: tempDir('bundle-rejects') });
  return prepared.tasks.slice(0, limit);
}

/** The single module a repair task starts from. */
export const moduleOf = (task: Task): string => Object.keys(task.files)[0]!;

export function writeStep(index: number, path: string, content: string): Step {
  return {
    index,
    observation: '',
    toolCall: { name: 'write_file', arguments: { path, content } },
    toolResult: { ok: true, output: 'written', truncated: false, exitCode: 0 },
    decision: null,
    llm: null,
    startedAt: nowIso(),
    durationMs: 1,
    sandboxMs: 1,
  } as Step;
}

/** A trajectory that ends with `finalFiles`, as a rollout worker would publish it. */
export function trajectoryFor(task: Task, finalFiles: Record<string, string>, options: { groupId?: string; groupSize?: number; attempt?: number; runId?: string; steps?: Step[]; extras?: WorkspaceExtras } = {}): Trajectory {
  const attempt = options.attempt ?? 0;
  const groupId = options.groupId ?? `fixture/${task.taskId}`;
  return {
    trajectoryId: `${groupId}/${attempt}`,
    groupId,
    groupSize: options.groupSize ?? 1,
    envId: task.envId,
    policyId: 'fixture',
    steps: options.steps ?? [],
    finalFiles,
    finalExtras: options.extras ?? NO_WORKSPACE_EXTRAS,
    outcome: 'submitted',
    error: null,
    totalMs: 1,
    sandboxMs: 1,
    lineage: { taskId: task.taskId, attempt, runId: options.runId ?? 'fixture', policyVersion: 0, sandboxImageDigest: null, verifierVersion: null, createdAt: nowIso() },
  } as Trajectory;
}
