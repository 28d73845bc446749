import { randomUUID } from 'node:crypto';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { startDashboard, type Dashboard } from '../../dashboard/index.js';
import { runLoop, type LoopOptions, type LoopSummary } from '../../pipelines/loop/index.js';
import { policyIds } from '../../policies/index.js';
import { imageFor, stackUp } from '../../stack/index.js';
import { stackFor } from '../stack-for.js';
import type { Command } from '../command.js';
import { processorContext } from '../context.js';
import { intOption, LLM_HELP, LLM_OPTIONS, policyChoice, requiredInt, stringOption, taskRowsFile, type OptionValues } from '../options.js';
import { bundledTasks, checkpointStore, dataDir } from '../paths.js';
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

/** The loop's settings from the command line, every one checked: a bad value stops before `stack up`. */
export type DemoSettings = Required<Pick<LoopOptions, 'taskFile' | 'dataDir' | 'policyId' | 'groupSize' | 'batchSize' | 'maxTurns' | 'rolloutWorkers' | 'verifiers'>> &
  Pick<LoopOptions, 'limitTasks' | 'llm'>;

export function resolveDemoSettings(values: OptionValues): DemoSettings {
  return {
    taskFile: taskRowsFile(stringOption(values, 'tasks') ?? bundledTasks(), '--tasks'),
    dataDir: dataDir(),
    ...policyChoice(values, policyIds()),
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
    policy: { type: 'string', default: 'linear-repair' },
    dashboard: { type: 'boolean' },
    ...LLM_OPTIONS,
  },
  help: {
    tasks: 'JSON Lines task file (default: the bundled tasks/repair-bundle.jsonl)',
    limit: 'use only the first N tasks',
    'group-size': 'samples per task (G)',
    'batch-size': 'samples per learner update',
    'max-turns': 'tool calls per episode',
    workers: 'rollout worker instances',
    verifiers: 'verifier instances',
    policy: `policy kind: ${policyIds().join(', ')} (llm brings the stack's model server up unless --llm-url or LLM_BASE_URL names another)`,
    dashboard: 'serve the live dashboard of this run alongside (http://127.0.0.1:8321/; see trialrun dashboard --help)',
    ...LLM_HELP,
  },
  async run(values) {
    const settings = resolveDemoSettings(values);
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
