import { createHash, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { LocalCheckpointStore } from '../../connectors/checkpoints/index.js';
import { createKafka } from '../../connectors/kafka/index.js';
import { prepareTasks } from '../../pipelines/jobs/task-job/index.js';
import { DECODINGS, LLM_POLICY, ONNX_REPAIR_POLICY, policyIds, policyKind, type Decoding } from '../../policies/index.js';
import { ConfigError, type Task } from '../../schemas/index.js';
import { stackUp } from '../../stack/index.js';
import { stackFor } from '../stack-for.js';
import type { Command } from '../command.js';
import { formatExperiment, runExperiment, saveExperiment } from '../experiment.js';
import { choiceOption, existingFile, intOption, LLM_HELP, LLM_OPTIONS, numberOption, policyChoice, requiredInt, stringOption, taskRowsFile, type OptionValues } from '../options.js';
import { bundledTasks, checkStorageLocations, dataDir, rejectsLocation, stateDir } from '../paths.js';
import { openSandboxPool, SANDBOX_HELP, sandboxBackend } from '../sandbox-backend.js';
import { loopLlmLearner } from '../llm-learner.js';
import { loopWeightServer } from '../weight-server.js';
import { isWorkspaceJobFile, workspaceJobTasks } from '../workspace-tasks.js';

/** Tasks the data job marked `eval`, or else a stable hash-chosen fraction: never trained on. */
export function splitTasks(tasks: readonly Task[], evalFraction: number): { train: Task[]; held: Task[] } {
  const marked = tasks.filter((t) => t.split === 'eval');
  if (marked.length > 0) return { train: tasks.filter((t) => t.split !== 'eval'), held: marked };
  const held = (task: Task): boolean => createHash('sha256').update(task.taskId).digest().readUInt32BE(0) / 2 ** 32 < evalFraction;
  return { train: tasks.filter((t) => !held(t)), held: tasks.filter(held) };
}

/** A rows file of repair tasks, or the job file of an environment's tasks (`env: single-turn/v1` or `workspace/v1`). */
function learnTaskFile(path: string): string {
  const absolute = existingFile(path, '--tasks');
  return isWorkspaceJobFile(absolute) ? absolute : taskRowsFile(absolute, '--tasks');
}

/**
 * At most `count` of the held-out tasks, spread evenly over the list: a job lists its generated tasks template by
 * template in turn, so every held-out template keeps its share. @default all of them
 */
export function spreadSubset<T>(items: readonly T[], count: number | undefined): T[] {
  if (count === undefined || count >= items.length) return [...items];
  return Array.from({ length: count }, (_, i) => items[Math.floor((i * items.length) / count)]!);
}

/** The experiment's settings from the command line, every one checked before `stack up`. */
export function resolveLearnSettings(values: OptionValues) {
  const defaults = values.policy === LLM_POLICY ? LLM_LEARN_DEFAULTS : LEARN_DEFAULTS;
  return {
    taskFile: learnTaskFile(stringOption(values, 'tasks') ?? bundledTasks()),
    evalTasks: intOption(values, 'eval-tasks'),
    minutes: numberOption(values, 'minutes', { above: 0 }),
    evalSamples: requiredInt(values, 'eval-samples'),
    evalConcurrency: requiredInt(values, 'eval-concurrency'),
    evalPercent: numberOption(values, 'eval-percent', { above: 0, below: 100 }),
    groupSize: intOption(values, 'group-size') ?? defaults.groupSize,
    batchSize: intOption(values, 'batch-size') ?? defaults.batchSize,
    maxTurns: requiredInt(values, 'max-turns'),
    rolloutWorkers: requiredInt(values, 'workers'),
    verifiers: requiredInt(values, 'verifiers'),
    learningRate: values['learning-rate'] === undefined ? defaults.learningRate : numberOption(values, 'learning-rate', { above: 0 }),
    epochs: requiredInt(values, 'epochs'),
    policy: policyChoice(values, policyIds()),
    sandbox: sandboxBackend(values, String(values.policy ?? ONNX_REPAIR_POLICY)),
    evalSeed: stringOption(values, 'eval-seed'),
    evalDecoding: choiceOption<Decoding>(values, 'eval-decoding', DECODINGS),
    tailAverage: numberOption(values, 'tail-average', { above: 0, below: 1, inclusive: true }),
    evalServerThreads: intOption(values, 'eval-server-threads'),
  };
}

/**
 * The scripted policies' training settings, which `demo` uses too: on this 2-core machine groups of 8 and
 * batches of 16 learned more in 20 minutes than groups of 4 and batches of 8, and a step of 0.1 more than
 * 0.03 (docs/learner.md, "Measured").
 */
export const LEARN_DEFAULTS = { groupSize: 8, batchSize: 16, learningRate: 0.1 } as const;
/** An llm episode costs minutes on CPU, so its groups stay small; its learner keeps its own step size (1e-4, llm-learner/README.md). */
const LLM_LEARN_DEFAULTS = { groupSize: 4, batchSize: 8, learningRate: undefined } as const;

export const learnCommand: Command = {
  name: 'learn',
  summary:
    'Measure learning: the success rate within N turns of the untrained policy on held-out tasks, then the loop for T minutes on the\n' +
    'training tasks, then the success rate of the trained policy (the mean of the newest half of its checkpoints) on the same held-out tasks and episode seeds.',
  usage: '',
  options: {
    tasks: { type: 'string' },
    minutes: { type: 'string', default: '20' },
    'eval-samples': { type: 'string', default: '2' },
    'eval-concurrency': { type: 'string', default: '2' },
    'eval-percent': { type: 'string', default: '25' },
    'eval-tasks': { type: 'string' },
    'group-size': { type: 'string' },
    'batch-size': { type: 'string' },
    'max-turns': { type: 'string', default: '8' },
    workers: { type: 'string', default: '2' },
    verifiers: { type: 'string', default: '2' },
    'learning-rate': { type: 'string' },
    epochs: { type: 'string', default: '1' },
    policy: { type: 'string', default: ONNX_REPAIR_POLICY },
    sandbox: { type: 'string' },
    'eval-seed': { type: 'string' },
    'eval-decoding': { type: 'string', default: 'greedy' },
    'tail-average': { type: 'string', default: '0.5' },
    'eval-server-threads': { type: 'string' },
    ...LLM_OPTIONS,
  },
  help: {
    tasks: 'JSON Lines task file with held-out rows marked split "eval", or the job file of an environment\'s tasks (tasks/single-turn/python-expressions.yaml: held-out templates are marked eval) (default: the bundled tasks)',
    minutes: 'training time (T)',
    'eval-samples': 'episodes per held-out task, for each of the two evaluations',
    'eval-concurrency': 'held-out episodes at once (each one sandbox, then its verification\'s)',
    'eval-percent': 'share of tasks held out when none is marked "eval"',
    'eval-tasks': 'held-out tasks evaluated at most, spread evenly over the held-out list (default: all)',
    'group-size': `samples per task in training (default: ${LEARN_DEFAULTS.groupSize}; llm: ${LLM_LEARN_DEFAULTS.groupSize})`,
    'batch-size': `samples per learner update (default: ${LEARN_DEFAULTS.batchSize}; llm: ${LLM_LEARN_DEFAULTS.batchSize})`,
    'max-turns': 'tool calls per episode (N); 8 leaves two tries at an edit after running the tests and listing the edits',
    workers: 'rollout worker instances',
    verifiers: 'verifier instances',
    'learning-rate': `the learner's Adam step size (default: ${LEARN_DEFAULTS.learningRate}; llm: the Python learner's own, 1e-4)`,
    epochs: 'the learner\'s ascent steps on each batch (PPO epochs; the clip bounds how far each batch moves the policy)',
    sandbox: SANDBOX_HELP,
    'eval-seed': 'seed of the held-out episodes, the same for both evaluations (default: the run id); repeat it to replay them',
    'tail-average':
      'share of the newest checkpoints whose mean parameters the trained evaluation plays (tail averaging: the last version of a noisy ascent swings, the mean of the last half much less); 0: the newest alone (llm: always)',
    'eval-server-threads': 'llm: CPU threads of the stack\'s model server during the held-out evaluations, while the learner is idle (default: its share in training, half the cores; more pays only where the cores outnumber the server\'s threads and the grading sandboxes\' work)',
    'eval-decoding': `how both evaluations choose: greedy (the most probable choice; llm: temperature 0) or sample (drawn, as in training)`,
    policy: `policy kind to train: ${policyIds().join(', ')} (llm: the Python LLM learner trains a LoRA adapter, weight sync serves each version from the stack's model server)`,
    ...LLM_HELP,
  },
  async run(values) {
    const { taskFile, evalTasks, minutes, evalSamples, evalConcurrency, evalPercent, groupSize, batchSize, maxTurns, rolloutWorkers, verifiers, learningRate, epochs, policy, sandbox, evalSeed, evalDecoding, tailAverage, evalServerThreads } = resolveLearnSettings(values);
    const runId = `learn-${randomUUID().slice(0, 8)}`;
    const data = dataDir();
    // The task file needs no service: a file without both kinds of task stops before the stack comes up.
    const rejectsDir = rejectsLocation();
    const tasks = isWorkspaceJobFile(taskFile) ? await workspaceJobTasks(taskFile, rejectsDir) : (await prepareTasks({ file: taskFile, rejectsDir, jobRunId: runId })).tasks;
    const split = splitTasks(tasks, evalPercent / 100);
    const train = split.train;
    const held = spreadSubset(split.held, evalTasks);
    if (train.length === 0 || held.length === 0) throw new ConfigError(`${taskFile}: need both training and held-out tasks, got ${train.length} and ${held.length} (rejected rows: ${rejectsDir})`);
    process.stderr.write(`${runId}: ${train.length} training tasks, ${held.length} held out\n`);
    await stackUp((line) => void process.stderr.write(`${line}\n`), stackFor(policy));
    // An s3:// location (the report's TRIALRUN_EXPERIMENTS among them) that cannot be written is said now, not after the run.
    await checkStorageLocations();

    const kind = policyKind(policy.policyId, { llm: policy.llm });
    const checkpoints = join(stateDir(), 'checkpoints', runId);
    const topicPrefix = `${runId}.`;
    // The llm policy's learner: the Python process, on the experiment's topics and checkpoint folder.
    const externalLearner = policy.llm
      ? await loopLlmLearner({ runId, topicPrefix, checkpoints, batchSize, policy: policy.llm, extraArgs: [...(learningRate === undefined ? [] : ['--learning-rate', String(learningRate)]), '--epochs', String(epochs)] })
      : undefined;
    const pool = openSandboxPool(sandbox);
    // Ctrl-C stops the processors and the learner process and releases every sandbox, as in demo.
    const interrupt = new AbortController();
    const stop = (): void => interrupt.abort();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    try {
      const report = await runExperiment({
        runId,
        kind,
        train,
        held,
        kafka: createKafka(),
        pool,
        topicPrefix,
        checkpoints: new LocalCheckpointStore(checkpoints),
        dataDir: data,
        minutes,
        evalSamples,
        seed: evalSeed,
        decoding: evalDecoding,
        tailAverage,
        ...(evalServerThreads === undefined ? {} : { evalServerThreads }),
        evalConcurrency: policy.llm ? undefined : evalConcurrency,
        groupSize,
        batchSize,
        maxTurns,
        rolloutWorkers,
        verifiers,
        learningRate,
        epochs,
        llm: policy.llm,
        weightServer: loopWeightServer(policy.llm),
        externalLearner,
        signal: interrupt.signal,
      });
      const file = await saveExperiment(report, data);
      process.stdout.write(`${formatExperiment(report, file, sandbox)}\n`);
      return 0;
    } catch (error) {
      if (!interrupt.signal.aborted) throw error;
      process.stderr.write(`${runId} interrupted; processors and the learner stopped, sandboxes released\n`);
      return 130;
    } finally {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      await pool.close();
    }
  },
};
