import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { LocalCheckpointStore } from '../../connectors/checkpoints/index.js';
import { createKafka } from '../../connectors/kafka/index.js';
import { TopicSerde } from '../../connectors/registry/index.js';
import { startDashboard, type Dashboard } from '../../dashboard/index.js';
import { LlmGateway } from '../../connectors/llm/index.js';
import { AGENT_COMMAND_ENV, ENVIRONMENTS, PROGRAM_REPAIR_ENV, SINGLE_TURN_ENV, WORKSPACE_ENV } from '../../envs/index.js';
import { prepareTasks } from '../../pipelines/jobs/task-job/index.js';
import { runLoop, type LoopOptions, type LoopSummary } from '../../pipelines/loop/index.js';
import { prepareTopics } from '../../pipelines/runtime/index.js';
import { LLM_POLICY, ONNX_REPAIR_POLICY, policyIds, policyKind, policyKindFor, type Decoding } from '../../policies/index.js';
import { ConfigError, topicNames, type Task } from '../../schemas/index.js';
import { imageFor, stackUp } from '../../stack/index.js';
import { stackFor } from '../stack-for.js';
import { workspaceJobTasks } from '../workspace-tasks.js';
import type { Command } from '../command.js';
import { processorContext } from '../context.js';
import { demoTaskRows } from '../demo-tasks.js';
import { formatExperiment, runExperiment, saveExperiment } from '../experiment.js';
import { choiceOption, existingFile, intOption, LLM_HELP, LLM_OPTIONS, numberOption, policyChoice, requiredInt, stringOption, taskRowsFile, type OptionValues } from '../options.js';
import { bundledTasks, checkpointsLocation, checkpointStore, checkStorageLocations, dataDir, rejectsLocation, repoRoot, stateDir, treeStore } from '../paths.js';
import { llmLearnerInstalled, loopLlmLearner } from '../llm-learner.js';
import { loopWeightServer } from '../weight-server.js';
import { endProgress, printProgress, progressLine } from '../progress.js';
import { openSandboxPool, SANDBOX_HELP, sandboxBackend, type SandboxBackendName } from '../sandbox-backend.js';
import { LEARN_DEFAULTS, splitTasks, spreadSubset } from './learn.js';

/** The program-repair tasks of the demo: a rows file given, else the HumanEval-derived ones (derived once), else the bundled set. */
async function demoRepairTasks(taskFile: string | undefined, data: string, pool: Parameters<typeof demoTaskRows>[1], runId: string): Promise<{ file: string; tasks: readonly Task[] }> {
  const rows = taskFile ? { file: taskFile, note: null } : await demoTaskRows(data, pool, (line) => void process.stderr.write(`${line}\n`));
  if (rows.note) process.stderr.write(`[demo] ${rows.note}\n`);
  return { file: rows.file, tasks: (await prepareTasks({ file: rows.file, rejectsDir: rejectsLocation({ 'data-dir': data }), jobRunId: runId })).tasks };
}

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
const DEMO_DEFAULTS: Record<string, { readonly tasks: (() => string) | null; readonly policy: string }> = {
  // null: the HumanEval-derived tasks, derived once into the data folder (cli/demo-tasks.ts).
  [PROGRAM_REPAIR_ENV]: { tasks: null, policy: ONNX_REPAIR_POLICY },
  [WORKSPACE_ENV]: { tasks: () => join(repoRoot(), 'tasks', 'workspace-mini', 'job.yaml'), policy: LLM_POLICY },
  [SINGLE_TURN_ENV]: { tasks: () => join(repoRoot(), 'tasks', 'single-turn', 'python-expressions.yaml'), policy: LLM_POLICY },
  [AGENT_COMMAND_ENV]: { tasks: () => join(repoRoot(), 'tasks', 'workspace-mini', 'job.yaml'), policy: LLM_POLICY },
};

/** Agent programs `--agent` names: the command, and the sandbox image recipe it is installed in. */
export const DEMO_AGENTS: Record<string, { readonly command: string; readonly image: string }> = {
  'mini-swe-agent': { command: 'run-mini-swe-agent', image: 'mini-swe-agent' },
};

/** The agent program of `--agent` or `--agent-command` (not both); null when neither is given. */
export function demoAgent(values: OptionValues): { readonly command: string; readonly image: string | null } | null {
  const named = stringOption(values, 'agent');
  const command = stringOption(values, 'agent-command');
  if (named !== undefined && command !== undefined) throw new ConfigError('--agent and --agent-command each choose the agent program; give one');
  if (named !== undefined) return DEMO_AGENTS[choiceOption(values, 'agent', Object.keys(DEMO_AGENTS))]!;
  return command === undefined ? null : { command, image: null };
}

/** The environment a demo runs: --env, else single-turn/v1 for the llm policy (the experiment it learns in), else program repair. */
const demoEnv = (values: OptionValues): string =>
  demoAgent(values) !== null ? AGENT_COMMAND_ENV : values.env === undefined ? (values.policy === LLM_POLICY ? SINGLE_TURN_ENV : PROGRAM_REPAIR_ENV) : choiceOption(values, 'env', Object.keys(DEMO_DEFAULTS));

/**
 * The llm policy's experiment on single-turn tasks, scaled to end within about 25 minutes on this 2-core machine: 64
 * held-out tasks x 2 episodes each side, sampled as in training (greedy decoding takes the untrained model's mode,
 * which RL moves last: learn-6ebdd8f9 and demo-70e2dfa7 saw it within noise where the sampled policy gained), 12
 * minutes of the loop in groups of 8 and updates of 4 groups,
 * replies of at most 48 tokens sampled at temperature 0.7 with top-p 1 (the distribution the learner models).
 */
export const DEMO_LLM_EXPERIMENT = { minutes: 12, evalSamples: 2, evalTasks: 64, decoding: 'sample', groupSize: 8, batchSize: 32, maxTurns: 1, learningRate: 5e-4, maxTokensPerTurn: '48', topP: '1' } as const;

/**
 * The experiment's defaults (a trainable policy): `learn`'s training settings, 10 minutes, 8 turns (two
 * tries at an edit) and 2 episodes per held-out task, which halve the evaluation's noise against one. The
 * plain loop (llm, not trained) keeps its own.
 */
export const DEMO_EXPERIMENT = { minutes: 10, evalSamples: 2, maxTurns: 8, ...LEARN_DEFAULTS } as const;
const DEMO_LOOP = { groupSize: 4, batchSize: 16, maxTurns: 14 } as const;

/** The loop's settings from the command line, every one checked: a bad value stops before `stack up`. */
export type DemoSettings = Required<Pick<LoopOptions, 'dataDir' | 'policyId' | 'groupSize' | 'batchSize' | 'maxTurns' | 'rolloutWorkers' | 'verifiers'>> &
  Pick<LoopOptions, 'limitTasks' | 'llm' | 'taskFile'> & {
    readonly envId: string;
    /** A workspace job file whose tasks the demo builds (a dry run of the task job); set instead of taskFile. */
    readonly workspaceJob?: string;
    /** Set for a trainable policy: train, then compare untrained and trained on held-out tasks. */
    readonly experiment?: {
      readonly minutes: number;
      readonly evalSamples: number;
      readonly evalConcurrency: number;
      readonly learningRate: number;
      readonly evalPercent: number;
      /** Held-out tasks evaluated at most, spread over the held-out list. @default all */
      readonly evalTasks?: number;
      /** How both evaluations choose. @default 'greedy' */
      readonly decoding?: Decoding;
    };
    readonly sandbox: SandboxBackendName;
  };

export function resolveDemoSettings(values: OptionValues): DemoSettings {
  const envId = demoEnv(values);
  const defaults = DEMO_DEFAULTS[envId]!;
  // The llm experiment samples short replies from the whole distribution unless told otherwise.
  const llmExperiment = envId === SINGLE_TURN_ENV && (values.policy ?? defaults.policy) === LLM_POLICY;
  const policyValues = llmExperiment ? { 'max-tokens-per-turn': DEMO_LLM_EXPERIMENT.maxTokensPerTurn, 'top-p': DEMO_LLM_EXPERIMENT.topP, ...values } : values;
  const policy = policyChoice({ ...policyValues, policy: values.policy ?? defaults.policy }, policyIds());
  // A policy that does not serve the environment stops here, before the stack is touched.
  // The experiment is for kinds trained in this process, and for the llm policy on single-turn tasks, which its
  // Python learner trains; elsewhere the llm policy's loop runs once over the tasks.
  const trainable = llmExperiment || (policyKindFor(policy.policyId, [ENVIRONMENTS.get(envId).id], { llm: policy.llm }).trainable ?? true) === true;
  const given = stringOption(values, 'tasks');
  const tasks = given ?? defaults.tasks?.();
  const taskSource =
    envId === PROGRAM_REPAIR_ENV
      ? { taskFile: tasks === undefined ? undefined : taskRowsFile(tasks, '--tasks') }
      : { workspaceJob: existingFile(tasks!, '--tasks (a workspace job file)') };
  const fallback = llmExperiment ? DEMO_LLM_EXPERIMENT : trainable ? DEMO_EXPERIMENT : DEMO_LOOP;
  const experimentDefaults = llmExperiment ? DEMO_LLM_EXPERIMENT : DEMO_EXPERIMENT;
  const int = (name: string, value: number): number => intOption(values, name) ?? value;
  const experimentOnly = ['minutes', 'eval-samples', 'eval-concurrency', 'learning-rate'].filter((name) => values[name] !== undefined);
  if (!trainable && experimentOnly.length > 0) throw new ConfigError(`${experimentOnly.map((name) => `--${name}`).join(', ')} go with a trainable policy; --policy ${policy.policyId} is rolled out, not trained`);
  return {
    envId,
    ...taskSource,
    dataDir: dataDir(),
    ...policy,
    limitTasks: intOption(values, 'limit'),
    groupSize: int('group-size', fallback.groupSize),
    batchSize: int('batch-size', fallback.batchSize),
    maxTurns: int('max-turns', fallback.maxTurns),
    rolloutWorkers: requiredInt(values, 'workers'),
    verifiers: requiredInt(values, 'verifiers'),
    // Single-turn grading runs one short command per reply: process sandboxes, about 20x cheaper than Docker's, by default.
    sandbox: sandboxBackend(llmExperiment ? { sandbox: 'process', ...values } : values, policy.policyId),
    ...(trainable
      ? {
          experiment: {
            minutes: values.minutes === undefined ? experimentDefaults.minutes : numberOption(values, 'minutes', { above: 0 }),
            evalSamples: int('eval-samples', experimentDefaults.evalSamples),
            evalConcurrency: int('eval-concurrency', 2),
            learningRate: values['learning-rate'] === undefined ? experimentDefaults.learningRate : numberOption(values, 'learning-rate', { above: 0 }),
            evalPercent: 25,
            ...(llmExperiment ? { evalTasks: DEMO_LLM_EXPERIMENT.evalTasks, decoding: DEMO_LLM_EXPERIMENT.decoding } : {}),
          },
        }
      : {}),
  };
}

export const demoCommand: Command = {
  name: 'demo',
  summary:
    'Bring the stack up and show the loop learning: the untrained policy on held-out tasks, the whole loop (tasks -> rollouts ->\n' +
    'verification -> rewards -> learner -> Parquet) on the training tasks for --minutes, then the trained policy on the same held-out\n' +
    'episodes, with 95% intervals. With a policy that is not trained (llm, workspace/v1) it runs the loop once over the tasks.',
  usage: '',
  options: {
    tasks: { type: 'string' },
    limit: { type: 'string' },
    minutes: { type: 'string' },
    'eval-samples': { type: 'string' },
    'eval-concurrency': { type: 'string' },
    'learning-rate': { type: 'string' },
    'group-size': { type: 'string' },
    'batch-size': { type: 'string' },
    'max-turns': { type: 'string' },
    workers: { type: 'string', default: '2' },
    verifiers: { type: 'string', default: '2' },
    sandbox: { type: 'string' },
    dashboard: { type: 'boolean' },
    env: { type: 'string' },
    policy: { type: 'string' },
    agent: { type: 'string' },
    'agent-command': { type: 'string' },
    ...LLM_OPTIONS,
  },
  help: {
    env: `environment: ${Object.keys(DEMO_DEFAULTS).join(', ')} (default: program-repair/v1, or single-turn/v1 with --policy llm: the llm experiment on tasks/single-turn/python-expressions.yaml; workspace/v1 runs tasks/workspace-mini with --policy llm)`,
    tasks:
      'program-repair/v1: a JSON Lines task file (default: the HumanEval-derived tasks, derived once into the data folder, else the bundled\n' +
      'tasks/repair-bundle.jsonl); workspace/v1: a workspace job file (default: tasks/workspace-mini/job.yaml)',
    limit: 'use only the first N tasks',
    minutes: `training time (default: ${DEMO_EXPERIMENT.minutes}; trainable policies)`,
    'eval-samples': `episodes per held-out task in each evaluation (default: ${DEMO_EXPERIMENT.evalSamples})`,
    'eval-concurrency': 'held-out episodes at once (default: 2)',
    'learning-rate': `the learner's Adam step size (default: ${DEMO_EXPERIMENT.learningRate})`,
    'group-size': `samples per task (G) (default: ${DEMO_EXPERIMENT.groupSize})`,
    'batch-size': `samples per learner update (default: ${DEMO_EXPERIMENT.batchSize}; ${DEMO_LOOP.batchSize} for a policy that is not trained)`,
    'max-turns': `tool calls per episode (default: ${DEMO_EXPERIMENT.maxTurns}; ${DEMO_LOOP.maxTurns} for a policy that is not trained)`,
    workers: 'rollout worker instances',
    verifiers: 'verifier instances',
    sandbox: SANDBOX_HELP,
    dashboard: 'serve the live dashboard of this run alongside (http://127.0.0.1:8321/; see trialrun dashboard --help)',
    agent: `an agent program in each task's sandbox instead of a policy acting (agent-command/v1 over the workspace job, its model the llm policy's server behind the gateway): ${Object.keys(DEMO_AGENTS).join(', ')}`,
    'agent-command': 'any other agent program: a bash command run in /workspace, given OPENAI_BASE_URL / OPENAI_API_KEY (its episode\'s gateway route), TRIALRUN_TASK, TRIALRUN_MODEL and TRIALRUN_MAX_TURNS',
    policy: `policy kind: ${policyIds().join(', ')}; default onnx-repair for program-repair/v1, llm for workspace/v1 (llm brings the stack's model server up unless --llm-url or LLM_BASE_URL names another)`,
    ...LLM_HELP,
  },
  async run(values) {
    const { envId, workspaceJob, experiment, sandbox, ...settings } = resolveDemoSettings(values);
    await stackUp((line) => void process.stderr.write(`${line}
`), stackFor(settings));
    // An s3:// location (the report's TRIALRUN_EXPERIMENTS among them) that cannot be written is said now, not after the run.
    await checkStorageLocations();
    const pool = openSandboxPool(sandbox);
    // After stack up: a Harbor job builds its task images FROM the sandbox images and runs solve.sh in sandboxes.
    const agent = demoAgent(values);
    const jobTasks = workspaceJob ? await workspaceJobTasks(workspaceJob, rejectsLocation({ 'data-dir': settings.dataDir }), '--tasks', pool) : undefined;
    // With an agent program the workspace tasks run in agent-command/v1, in the program's image where it names one.
    const tasks = agent && jobTasks ? jobTasks.map((task) => ({ ...task, envId: AGENT_COMMAND_ENV, ...(agent.image ? { image: agent.image } : {}) })) : jobTasks;
    const gateway = agent && settings.llm ? await LlmGateway.start({ baseUrl: settings.llm.baseUrl, upstreamApiKey: settings.llm.apiKey, defaultMaxTokens: settings.llm.maxTokensPerTurn }) : null;
    let dashboard: Dashboard | null = null;
    // Ctrl-C stops the processors and releases every sandbox instead of leaving containers behind.
    const interrupt = new AbortController();
    const stop = (): void => interrupt.abort();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    try {
      if (experiment) {
        const runId = `demo-${randomUUID().slice(0, 8)}`;
        const source = tasks ? { file: workspaceJob!, tasks } : await demoRepairTasks(settings.taskFile, settings.dataDir, pool, runId);
        const split = splitTasks(source.tasks.slice(0, settings.limitTasks ?? source.tasks.length), experiment.evalPercent / 100);
        const train = split.train;
        const held = spreadSubset(split.held, experiment.evalTasks);
        if (train.length === 0 || held.length === 0) throw new ConfigError(`${source.file}: need both training and held-out tasks, got ${train.length} and ${held.length}${settings.limitTasks ? ` (--limit ${settings.limitTasks})` : ''}`);
        process.stderr.write(`[demo] ${runId}: ${train.length} training tasks, ${held.length} held out, ${experiment.minutes} min of training, ${sandbox} sandboxes\n`);
        const kafka = createKafka();
        if (values.dashboard === true) {
          const names = topicNames(`${runId}.`);
          const context = { kafka, serde: new TopicSerde(names), names };
          await prepareTopics(context);
          dashboard = await startDashboard(context, { dataDir: settings.dataDir, pool, runId });
          process.stderr.write(`[demo] dashboard at ${dashboard.url}\n`);
        }
        const checkpoints = join(stateDir(), 'checkpoints', runId);
        // The llm policy: its Python learner on the experiment's topics and checkpoint folder, and weight sync on the stack's server.
        const llm = settings.llm
          ? {
              llm: settings.llm,
              weightServer: loopWeightServer(settings.llm),
              externalLearner: await loopLlmLearner({ runId, topicPrefix: `${runId}.`, checkpoints, batchSize: settings.batchSize, policy: settings.llm, extraArgs: ['--learning-rate', String(experiment.learningRate)] }),
            }
          : {};
        const report = await runExperiment({
          runId,
          kind: policyKind(settings.policyId, { llm: settings.llm }),
          ...llm,
          train,
          held,
          kafka,
          pool,
          checkpoints: new LocalCheckpointStore(checkpoints),
          dataDir: settings.dataDir,
          minutes: experiment.minutes,
          evalSamples: experiment.evalSamples,
          evalConcurrency: experiment.evalConcurrency,
          ...(experiment.decoding ? { decoding: experiment.decoding } : {}),
          groupSize: settings.groupSize,
          batchSize: settings.batchSize,
          maxTurns: settings.maxTurns,
          rolloutWorkers: settings.rolloutWorkers,
          verifiers: settings.verifiers,
          // The in-process learner takes it here; the llm policy's learner process got it on its command line (the report names it either way).
          learningRate: experiment.learningRate,
          signal: interrupt.signal,
          label: '[demo]',
        });
        process.stdout.write(`${formatExperiment(report, await saveExperiment(report, settings.dataDir), sandbox)}\n`);
        return 0;
      }
      const context = await processorContext();
      const runId = randomUUID();
      if (values.dashboard === true) {
        dashboard = await startDashboard(context, { dataDir: settings.dataDir, pool, runId });
        process.stderr.write(`[demo] dashboard at ${dashboard.url}\n`);
      }
      if (settings.llm && !llmLearnerInstalled()) process.stderr.write('[demo] the llm policy is rolled out, not trained: the LLM learner is not installed (`trialrun stack python llm-learner` installs it, ~5.7 GB)\n');
      const summary = await runLoop(context, {
        ...settings,
        runId,
        weightServer: loopWeightServer(settings.llm),
        // The llm policy learns as it is rolled out, where the Python learner is installed (a demo does not
        // install 5.7 GB unasked): the learner on the demo's topics and checkpoint folder.
        ...(settings.llm && llmLearnerInstalled() ? { externalLearner: await loopLlmLearner({ runId, topicPrefix: context.names.prefix, checkpoints: checkpointsLocation(), batchSize: settings.batchSize, policy: settings.llm, extraArgs: [] }) } : {}),
        tasks,
        ...(agent && gateway ? { agentProgram: { command: agent.command, gateway } } : {}),
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
      await gateway?.stop();
      await pool.close();
    }
  },
};
