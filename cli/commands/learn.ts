import { createHash, randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalCheckpointStore } from '../../connectors/checkpoints/index.js';
import { createKafka } from '../../connectors/kafka/index.js';
import { TopicSerde } from '../../connectors/registry/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { evaluatePolicy, landEvaluation, type Evaluation } from '../../pipelines/jobs/evaluate/index.js';
import { runLoop } from '../../pipelines/loop/index.js';
import { prepareTasks } from '../../pipelines/jobs/task-job/index.js';
import { ONNX_REPAIR_POLICY, policyIds, policyKind } from '../../policies/index.js';
import { ConfigError, topicNames, type Task } from '../../schemas/index.js';
import { imageFor, stackUp } from '../../stack/index.js';
import { stackFor } from '../stack-for.js';
import type { Command } from '../command.js';
import { LLM_HELP, LLM_OPTIONS, numberOption, policyChoice, requiredInt, stringOption, taskRowsFile, type OptionValues } from '../options.js';
import { bundledTasks, dataDir, stateDir } from '../paths.js';
import { endProgress, printProgress, progressLine } from '../progress.js';
import { loopWeightServer } from '../weight-server.js';

/** Tasks the data job marked `eval`, or else a stable hash-chosen fraction: never trained on. */
export function splitTasks(tasks: readonly Task[], evalFraction: number): { train: Task[]; held: Task[] } {
  const marked = tasks.filter((t) => t.split === 'eval');
  if (marked.length > 0) return { train: tasks.filter((t) => t.split !== 'eval'), held: marked };
  const held = (task: Task): boolean => createHash('sha256').update(task.taskId).digest().readUInt32BE(0) / 2 ** 32 < evalFraction;
  return { train: tasks.filter((t) => !held(t)), held: tasks.filter(held) };
}

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;

/** Success rates within each number of turns at which some episode was solved (the last is within maxTurns). */
function withinTurns(before: Evaluation, after: Evaluation, maxTurns: number): Array<{ turns: number; untrained: number; trained: number }> {
  const rate = (e: Evaluation, n: number): number => (e.episodes ? (e.successesWithin[n] ?? 0) / e.episodes : 0);
  const turns = Array.from({ length: maxTurns }, (_, i) => i + 1).filter(
    (n) => n === maxTurns || before.successesWithin[n]! !== before.successesWithin[n - 1]! || after.successesWithin[n]! !== after.successesWithin[n - 1]!,
  );
  return turns.map((n) => ({ turns: n, untrained: rate(before, n), trained: rate(after, n) }));
}

/** The figures of an evaluation; its episodes are in the analytics store. */
const withoutRecords = ({ records, ...figures }: Evaluation): Omit<Evaluation, 'records'> => figures;

/** The experiment's settings from the command line, every one checked before `stack up`. */
export function resolveLearnSettings(values: OptionValues) {
  return {
    taskFile: taskRowsFile(stringOption(values, 'tasks') ?? bundledTasks(), '--tasks'),
    minutes: numberOption(values, 'minutes', { above: 0 }),
    evalSamples: requiredInt(values, 'eval-samples'),
    evalPercent: numberOption(values, 'eval-percent', { above: 0, below: 100 }),
    groupSize: requiredInt(values, 'group-size'),
    batchSize: requiredInt(values, 'batch-size'),
    maxTurns: requiredInt(values, 'max-turns'),
    rolloutWorkers: requiredInt(values, 'workers'),
    verifiers: requiredInt(values, 'verifiers'),
    learningRate: numberOption(values, 'learning-rate', { above: 0 }),
    policy: policyChoice(values, policyIds()),
  };
}

export const learnCommand: Command = {
  name: 'learn',
  summary:
    'Measure learning: the success rate within N turns of the untrained policy on held-out tasks, then the loop for T minutes on the\n' +
    'training tasks, then the success rate of the newest checkpoint on the same held-out tasks and episode seeds.',
  usage: '',
  options: {
    tasks: { type: 'string' },
    minutes: { type: 'string', default: '20' },
    'eval-samples': { type: 'string', default: '1' },
    'eval-percent': { type: 'string', default: '25' },
    'group-size': { type: 'string', default: '4' },
    'batch-size': { type: 'string', default: '8' },
    'max-turns': { type: 'string', default: '8' },
    workers: { type: 'string', default: '2' },
    verifiers: { type: 'string', default: '2' },
    'learning-rate': { type: 'string', default: '0.1' },
    policy: { type: 'string', default: ONNX_REPAIR_POLICY },
    ...LLM_OPTIONS,
  },
  help: {
    tasks: 'JSON Lines task file with held-out rows marked split "eval" (default: the bundled tasks)',
    minutes: 'training time (T)',
    'eval-samples': 'episodes per held-out task, for each of the two evaluations',
    'eval-percent': 'share of tasks held out when none is marked "eval"',
    'group-size': 'samples per task in training',
    'batch-size': 'samples per learner update',
    'max-turns': 'tool calls per episode (N); 8 leaves two tries at an edit after running the tests and listing the edits',
    workers: 'rollout worker instances',
    verifiers: 'verifier instances',
    'learning-rate': 'the learner\'s Adam step size',
    policy: `policy kind to train: ${policyIds().join(', ')} (llm is rolled out and evaluated, not trained: its weights are the model server's)`,
    ...LLM_HELP,
  },
  async run(values) {
    const { taskFile, minutes, evalSamples, evalPercent, groupSize, batchSize, maxTurns, rolloutWorkers, verifiers, learningRate, policy } = resolveLearnSettings(values);
    const runId = `learn-${randomUUID().slice(0, 8)}`;
    const data = dataDir();
    // The task file needs no service: a file without both kinds of task stops before the stack comes up.
    const prepared = await prepareTasks({ file: taskFile, rejectsDir: join(data, 'rejects'), jobRunId: runId });
    const { train, held } = splitTasks(prepared.tasks, evalPercent / 100);
    if (train.length === 0 || held.length === 0) throw new ConfigError(`${taskFile}: need both training and held-out tasks, got ${train.length} and ${held.length} (rejected rows: ${prepared.rejectsFile})`);
    process.stderr.write(`${runId}: ${train.length} training tasks, ${held.length} held out\n`);
    await stackUp((line) => void process.stderr.write(`${line}\n`), stackFor(policy));

    const kind = policyKind(policy.policyId, { llm: policy.llm });
    const pool = new DockerSandboxPool();
    const store = new LocalCheckpointStore(join(stateDir(), 'checkpoints', runId));
    // Fresh topics: the run starts from the untrained policy and leaves the main topics alone.
    const names = topicNames(`${runId}.`);
    const kafka = createKafka();
    const context = { kafka, serde: new TopicSerde(names), names };
    // Held-out episodes land in the analytics store under a run id of their own, through topics of their own
    // (the loop's verifier, reward and learner must never see them).
    const heldOutRunId = `${runId}-heldout`;
    const heldOutNames = topicNames(`${heldOutRunId}.`);
    const heldOutContext = { kafka, serde: new TopicSerde(heldOutNames), names: heldOutNames };
    const evaluate = async (label: string, version: number, params: unknown): Promise<Evaluation> => {
      const started = performance.now();
      const result = await evaluatePolicy(await kind.load(params, version), held, {
        pool,
        imageFor,
        runId: heldOutRunId,
        maxTurns,
        samplesPerTask: evalSamples,
        concurrency: policy.llm?.concurrentEpisodes,
        seed: runId,
        onProgress: (done, total) => printProgress(progressLine(`[${label}]`, done, total, performance.now() - started)),
      });
      endProgress();
      process.stderr.write(`${label}: v${version} solved ${result.successes}/${result.episodes} (${pct(result.successRate)})\n`);
      await landEvaluation(heldOutContext, result.records, { dataDir: data });
      return result;
    };
    try {
      const before = await evaluate('untrained', 0, kind.initial().params);
      const summary = await runLoop(context, {
        tasks: train,
        dataDir: data,
        pool,
        imageFor,
        checkpoints: store,
        policyId: kind.policyId,
        llm: policy.llm,
        weightServer: loopWeightServer(policy.llm),
        runId,
        // Training stops at T even mid-epoch (a HumanEval-derived epoch takes longer than 20 minutes here).
        durationMs: minutes * 60_000,
        stopRolloutsAfterMs: minutes * 60_000,
        timeoutMs: minutes * 60_000 + 30 * 60_000,
        groupSize,
        batchSize,
        learningRate,
        maxTurns,
        rolloutWorkers,
        verifiers,
        onProgress: (p) => printProgress(progressLine(`[train epoch ${p.epochs}] rewarded`, p.rewarded, p.expected, p.elapsedMs, `policy v${p.policyVersion}`)),
      });
      endProgress();
      const newest = (await store.list(kind.policyId)).at(-1);
      const trainedParams = newest ? kind.decodeParams(await store.get(newest.artifact)) : kind.initial().params;
      const after = await evaluate('trained', newest?.version ?? 0, trainedParams);
      const report = {
        runId,
        policy: kind.policyId,
        minutes,
        maxTurns,
        trainTasks: train.length,
        heldOutTasks: held.length,
        heldOutRunId,
        untrained: withoutRecords(before),
        trained: withoutRecords(after),
        ratio: before.successRate > 0 ? after.successRate / before.successRate : null,
        training: summary,
      };
      const out = join(data, 'experiments');
      mkdirSync(out, { recursive: true });
      writeFileSync(join(out, `${runId}.json`), `${JSON.stringify(report, null, 2)}\n`);
      process.stdout.write(
        [
          `${runId}: ${minutes} min of training on ${train.length} tasks (${summary.trajectories} trajectories, ${summary.checkpoints} checkpoints)`,
          ...withinTurns(before, after, maxTurns).map(
            ({ turns, untrained, trained }) =>
              `held-out success within ${turns} turns: untrained ${pct(untrained)} -> trained v${after.policyVersion} ${pct(trained)}` +
              (untrained > 0 ? ` (${(trained / untrained).toFixed(2)}x)` : ''),
          ),
          'training pass rate per policy version:',
          ...summary.byPolicyVersion.map((row) => `  v${String(row.policyVersion).padEnd(4)} ${String(row.trajectories).padStart(4)} trajectories  ${pct(row.passRate)}`),
          `report: ${join(out, `${runId}.json`)}`,
          `curves (training and held-out): trialrun notebook run learning-curve --run ${runId} --run ${heldOutRunId}`,
        ].join('\n') + '\n',
      );
      return 0;
    } finally {
      await pool.close();
    }
  },
};
