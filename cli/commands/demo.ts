import { randomUUID } from 'node:crypto';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { startDashboard, type Dashboard } from '../../dashboard/index.js';
import { join } from 'node:path';
import { ENVIRONMENTS, PROGRAM_REPAIR_ENV, WORKSPACE_ENV } from '../../envs/index.js';
import { runLoop, type LoopOptions, type LoopSummary } from '../../pipelines/loop/index.js';
import { LINEAR_REPAIR_POLICY, LLM_POLICY, policyIds, policyKindFor } from '../../policies/index.js';
import { imageFor, stackUp } from '../../stack/index.js';
import { stackFor } from '../stack-for.js';
import { workspaceJobTasks } from '../workspace-tasks.js';
import type { Command } from '../command.js';
import { processorContext } from '../context.js';
import { loopWeightServer } from '../weight-server.js';
import { choiceOption, existingFile, intOption, LLM_HELP, LLM_OPTIONS, policyChoice, requiredInt, stringOption, taskRowsFile, type OptionValues } from '../options.js';
import { bundledTasks, checkpointStore, dataDir, repoRoot, treeStore } from '../paths.js';
import { endProgress, printProgress, progressLine } from '../progress.js';

export function formatSummary(summary: LoopSummary): string {
  const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
  return [
    `run ${summary.runId} finished in ${(summary.elapsedMs / 1000).toFixed(1)}s`,
    `tasks             ${summary.tasks} published${summary.epochs > 1 ? ` ${summary.epochs} times` : ''} (${summary.rejectedRows} rows rejected or duplicate${summary.rejectsFile ? `; see ${summary.rejectsFile}` : ''})`,
    `trajectories      ${summary.trajectories}, pass rate ${pct(summary.passRate)}`,
    'pass rate per policy version:',
    ...summary.byPolicyVersion.map((row) => `  v${String(row.policyVersion).padEnd(4)} ${String(row.trajectories).padStart(4)} trajectories  ${pct(row.passRate)}`),
    `checkpoints       ${summary.checkpoints}`,
    `sandbox time      ${summary.sandboxSeconds.toFixed(1)}s (rollouts + verification)`,
    `records per topic ${Object.entries(summary.recordsPerTopic).map(([t, n]) => `${t}=${n}`).join(' ')}`,
    `dead letters      ${summary.deadLetters}`,
    `parquet files     ${summary.dataDir} (query with: trialrun sql "SELECT ...")`,
  ].join('\n');
}

/** Per environment: the task set the demo runs and the policy it uses unless told otherwise. */
const DEMO_DEFAULTS: Record<string, { readonly tasks: () => string; readonly policy: string }> = {
  [PROGRAM_REPAIR_ENV]: { tasks: bundledTasks, policy: LINEAR_REPAIR_POLICY },
  [WORKSPACE_ENV]: { tasks: () => join(repoRoot(), 'tasks', 'workspace-mini', 'job.yaml'), policy: LLM_POLICY },
};

/** The loop's settings from the command line, every one checked: a bad value stops before `stack up`. */
export type DemoSettings = Required<Pick<LoopOptions, 'dataDir' | 'policyId' | 'groupSize' | 'batchSize' | 'maxTurns' | 'rolloutWorkers' | 'verifiers'>> &
  Pick<LoopOptions, 'limitTasks' | 'llm' | 'taskFile'> & {
    readonly envId: string;
    /** A workspace job file whose tasks the demo builds (a dry run of the task job); set instead of taskFile. */
    readonly workspaceJob?: string;
  };

export function resolveDemoSettings(values: OptionValues): DemoSettings {
  const envId = choiceOption(values, 'env', Object.keys(DEMO_DEFAULTS));
  const defaults = DEMO_DEFAULTS[envId]!;
  const policy = policyChoice({ ...values, policy: values.policy ?? defaults.policy }, policyIds());
  // A policy that does not serve the environment stops here, before the stack is touched.
  policyKindFor(policy.policyId, [ENVIRONMENTS.get(envId).id], { llm: policy.llm });
  const tasks = stringOption(values, 'tasks') ?? defaults.tasks();
  const taskSource =
    envId === PROGRAM_REPAIR_ENV ? { taskFile: taskRowsFile(tasks, '--tasks') } : { workspaceJob: existingFile(tasks, '--tasks (a workspace job file)') };
  return {
    envId,
    ...taskSource,
    dataDir: dataDir(),
    ...policy,
    limitTasks: intOption(values, 'limit'),
    groupSize: requiredInt(values, 'group-size'),
    batchSize: requiredInt(values, 'batch-size'),
    maxTurns: requiredInt(values, 'max-turns'),
    rolloutWorkers: requiredInt(values, 'workers'),
    verifiers: requiredInt(values, 'verifiers'),
  };
}

export const demoCommand: Command = {
  name: 'demo',
  summary: 'Bring the stack up and run the whole loop (tasks -> rollouts -> verification -> rewards -> learner -> Parquet) over the bundled task set, with progress and a summary.',
  usage: '',
  options: {
    tasks: { type: 'string' },
    limit: { type: 'string' },
    'group-size': { type: 'string', default: '4' },
    'batch-size': { type: 'string', default: '16' },
    'max-turns': { type: 'string', default: '14' },
    workers: { type: 'string', default: '2' },
    verifiers: { type: 'string', default: '2' },
    dashboard: { type: 'boolean' },
    env: { type: 'string', default: PROGRAM_REPAIR_ENV },
    policy: { type: 'string' },
    ...LLM_OPTIONS,
  },
  help: {
    env: `environment: ${Object.keys(DEMO_DEFAULTS).join(', ')} (workspace/v1 runs tasks/workspace-mini with --policy llm)`,
    tasks: 'program-repair/v1: a JSON Lines task file (default: the bundled tasks/repair-bundle.jsonl); workspace/v1: a workspace job file (default: tasks/workspace-mini/job.yaml)',
    limit: 'use only the first N tasks',
    'group-size': 'samples per task (G)',
    'batch-size': 'samples per learner update',
    'max-turns': 'tool calls per episode',
    workers: 'rollout worker instances',
    verifiers: 'verifier instances',
    dashboard: 'serve the live dashboard of this run alongside (http://127.0.0.1:8321/; see trialrun dashboard --help)',
    policy: `policy kind: ${policyIds().join(', ')}; default linear-repair for program-repair/v1, llm for workspace/v1 (llm brings the stack's model server up unless --llm-url or LLM_BASE_URL names another)`,
    ...LLM_HELP,
  },
  async run(values) {
    const { envId, workspaceJob, ...settings } = resolveDemoSettings(values);
    const tasks = workspaceJob ? await workspaceJobTasks(workspaceJob, join(settings.dataDir, 'rejects'), '--tasks') : undefined;
    await stackUp((line) => void process.stderr.write(`${line}\n`), stackFor(settings));
    const context = await processorContext();
    const pool = new DockerSandboxPool();
    const runId = randomUUID();
    let dashboard: Dashboard | null = null;
    // Ctrl-C stops the processors and releases every sandbox instead of leaving containers behind.
    const interrupt = new AbortController();
    const stop = (): void => interrupt.abort();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    try {
      if (values.dashboard === true) {
        dashboard = await startDashboard(context, { dataDir: settings.dataDir, pool, runId });
        process.stderr.write(`[demo] dashboard at ${dashboard.url}\n`);
      }
      const summary = await runLoop(context, {
        ...settings,
        runId,
        weightServer: loopWeightServer(settings.llm),
        tasks,
        trees: treeStore(),
        pool,
        imageFor,
        checkpoints: checkpointStore(),
        signal: interrupt.signal,
        onProgress: (p) => printProgress(progressLine('[demo] rewarded', p.rewarded, p.expected, p.elapsedMs, `rolled out ${p.rolledOut}, verified ${p.verified}, policy v${p.policyVersion}`)),
      });
      endProgress();
      process.stdout.write(`${formatSummary(summary)}\n`);
      return 0;
    } catch (error) {
      if (!interrupt.signal.aborted) throw error;
      endProgress();
      process.stderr.write('demo interrupted; processors stopped and sandboxes released\n');
      return 130;
    } finally {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      await dashboard?.close();
      await pool.close();
    }
  },
};
