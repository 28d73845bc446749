import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import type { CheckpointStore } from '../connectors/checkpoints/index.js';
import type { KafkaPort } from '../connectors/kafka/index.js';
import { TopicSerde } from '../connectors/registry/index.js';
import type { SandboxPool } from '../connectors/sandbox/index.js';
import { compareMeans, compareRates, evaluatePolicy, evaluationVerifier, landEvaluation, type Evaluation, type MeanComparison, type RateComparison, type RateSample, type TaskEvaluation } from '../pipelines/jobs/evaluate/index.js';
import { runLoop, type LoopOptions, type LoopSummary } from '../pipelines/loop/index.js';
import { serveBaseModel } from '../pipelines/weight-sync/index.js';
import type { AnyPolicyKind, Decoding, ResolvedLlmPolicyOptions } from '../policies/index.js';
import { openBlobStore } from '../connectors/storage/index.js';
import { ConfigError, isS3Url, topicNames, wholeNumber, type Task } from '../schemas/index.js';
import { imageFor, llmThreadShare } from '../stack/index.js';
import { endProgress, printProgress, progressLine } from './progress.js';

/** An experiment: the untrained policy on held-out tasks, the loop on the training tasks, the trained policy on the same held-out episodes. */
export interface ExperimentOptions {
  readonly runId: string;
  readonly kind: AnyPolicyKind<unknown>;
  readonly train: readonly Task[];
  readonly held: readonly Task[];
  readonly kafka: KafkaPort;
  /** Prefix of the loop's topics. @default `<runId>.` (fresh topics: the run starts from the untrained policy) */
  readonly topicPrefix?: string;
  readonly pool: SandboxPool;
  readonly checkpoints: CheckpointStore;
  readonly dataDir: string;
  readonly minutes: number;
  readonly evalSamples: number;
  /** Seed of the held-out episodes' random streams, the same for both evaluations; a run repeated with it replays them. @default runId */
  readonly seed?: string;
  /**
   * How both evaluations choose: 'greedy', the policy's most probable choice (deterministic evaluation, as RL
   * libraries score a trained policy; an untrained scripted policy, whose scores all tie, makes the same draws
   * as sampling), or 'sample', a draw from its distribution as in training. @default 'greedy'
   */
  readonly decoding?: Decoding;
  /**
   * What the second evaluation plays: the mean of the parameters of the newest `ceil(share x checkpoints)` of
   * the run's checkpoints (tail averaging, as Polyak-Ruppert and SWA average an ascent's late iterates). A noisy
   * ascent's last iterate swings from one version to the next, the mean of its tail much less. 0 plays the
   * newest checkpoint alone, as does a kind with no `average` (the llm policy). @default 0.5
   */
  readonly tailAverage?: number;
  readonly groupSize: number;
  readonly batchSize: number;
  readonly maxTurns: number;
  readonly rolloutWorkers: number;
  readonly verifiers: number;
  readonly learningRate?: number;
  /** The learner's ascent steps per batch. @default 1 */
  readonly epochs?: number;
  /** Episodes at once in each evaluation. @default 2 (llm: its concurrentEpisodes) */
  readonly evalConcurrency?: number;
  readonly llm?: ResolvedLlmPolicyOptions;
  /** Where the llm policy's checkpoints are served from during training (weight sync). @default none (no weight sync) */
  readonly weightServer?: LoopOptions['weightServer'];
  /**
   * The model server's CPU threads while an evaluation runs, where the weight server can set them (a llama.cpp server
   * the stack started); the loop gives it llmThreadShare() beside the learner. Not every core by default: an
   * evaluation's grading sandboxes need CPU too, and on 2 cores with other work running (load 10-15) a 2-thread server
   * evaluated 0.09 episodes a second against 0.26 on one thread at the higher load (the untrained evaluations of
   * learn-2ecc39db and learn-088785f2, docs/llm.md). More threads pay where the cores outnumber them. @default llmThreadShare()
   */
  readonly evalServerThreads?: number;
  /** The llm policy's learner process, on this experiment's topics and checkpoint store. @default none (the llm policy is not trained) */
  readonly externalLearner?: LoopOptions['externalLearner'];
  readonly signal?: AbortSignal;
  /** Progress lines are labelled with it. @default '' */
  readonly label?: string;
}

/** One evaluation's episodes and how fast they went. */
export interface TimedEvaluation {
  readonly evaluation: Omit<Evaluation, 'records'>;
  readonly seconds: number;
  readonly load: number;
}

export interface ExperimentReport {
  readonly runId: string;
  readonly heldOutRunId: string;
  readonly policy: string;
  readonly minutes: number;
  readonly maxTurns: number;
  readonly groupSize: number;
  readonly batchSize: number;
  /** The learner's step size; null: the policy kind's own. */
  readonly learningRate: number | null;
  readonly epochs: number;
  readonly trainTasks: number;
  readonly heldOutTasks: number;
  readonly evalSamples: number;
  /** The held-out episodes' seed (ExperimentOptions.seed). */
  readonly seed: string;
  /** How both evaluations chose (ExperimentOptions.decoding). */
  readonly decoding: Decoding;
  /** ExperimentOptions.tailAverage. */
  readonly tailAverage: number;
  /** The checkpoint versions whose mean the trained evaluation played, oldest first; one: the newest alone; none: training made no checkpoint. */
  readonly trainedVersions: readonly number[];
  readonly untrained: TimedEvaluation;
  readonly trained: TimedEvaluation;
  /** Held-out success within each turn budget at which some episode was solved (the last is maxTurns), with 95% intervals. */
  readonly budgets: readonly BudgetComparison[];
  /** Held-out mean reward (partial credit where tasks give it), task by task, with 95% intervals and the paired difference's. */
  readonly meanReward: MeanComparison;
  readonly training: LoopSummary;
  /** The 1-minute load average at the end of training (the machine is shared: figures are relative to it). */
  readonly trainingLoad: number;
}

export interface BudgetComparison extends RateComparison {
  readonly turns: number;
}

/**
 * The comparison at each number of turns where either policy's count of solved episodes grows, and at maxTurns.
 * Each side's interval counts the episodes of one task as correlated (effectiveEpisodes).
 */
/** What a turn-budget comparison reads of an evaluation. */
type Solved = Pick<Evaluation, 'episodes' | 'successesWithin'> & { readonly byTask: Readonly<Record<string, Pick<TaskEvaluation, 'episodes' | 'solvedIn'>>> };

export function budgetComparisons(before: Solved, after: Solved, maxTurns: number): BudgetComparison[] {
  const within = (e: Pick<Evaluation, 'successesWithin'>, n: number): number => e.successesWithin[n] ?? 0;
  const grows = (n: number): boolean => within(before, n) !== within(before, n - 1) || within(after, n) !== within(after, n - 1);
  const sample = (e: Solved, n: number): RateSample => ({
    successes: within(e, n),
    episodes: e.episodes,
    tasks: Object.values(e.byTask).map((task) => ({ episodes: task.episodes, successes: task.solvedIn.filter((turns) => turns <= n).length })),
  });
  return Array.from({ length: maxTurns }, (_, i) => i + 1)
    .filter((n) => n === maxTurns || grows(n))
    .map((turns) => ({ turns, ...compareRates(sample(before, turns), sample(after, turns)) }));
}

const load = (): number => loadavg()[0]!;

/** Each held-out task's episode rewards. */
const rewardsByTask = (evaluation: Pick<Evaluation, 'byTask'>): Record<string, readonly number[]> => Object.fromEntries(Object.entries(evaluation.byTask).map(([task, t]) => [task, t.rewards]));

/** The trained parameters the held-out evaluation plays (ExperimentOptions.tailAverage), and which versions they are made of. */
export async function trainedParams<P>(kind: Pick<AnyPolicyKind<unknown>, 'policyId' | 'initial' | 'decodeParams' | 'average'>, store: CheckpointStore, tailAverage: number): Promise<{ params: P; versions: number[] }> {
  const stored = await store.list(kind.policyId);
  if (stored.length === 0) return { params: kind.initial().params as P, versions: [] };
  const tail = kind.average ? stored.slice(-Math.max(1, Math.ceil(tailAverage * stored.length))) : stored.slice(-1);
  const params = await Promise.all(tail.map(async ({ artifact }) => kind.decodeParams(await store.get(artifact)) as P));
  return { params: tail.length === 1 ? params[0]! : (kind.average!(params) as P), versions: tail.map(({ version }) => version) };
}

function checkTailAverage(share: number): number {
  if (!(share >= 0 && share <= 1)) throw new ConfigError(`ExperimentOptions.tailAverage must be a share in 0..1, got ${share}`);
  return share;
}

export async function runExperiment(options: ExperimentOptions): Promise<ExperimentReport> {
  const { runId, kind, held, dataDir } = options;
  const seed = options.seed ?? runId;
  const decoding = options.decoding ?? 'greedy';
  const tailAverage = checkTailAverage(options.tailAverage ?? 0.5);
  const evalServerThreads = wholeNumber('ExperimentOptions.evalServerThreads', options.evalServerThreads ?? llmThreadShare(), { min: 1 });
  const label = options.label ? `${options.label} ` : '';
  const names = topicNames(options.topicPrefix ?? `${runId}.`);
  const context = { kafka: options.kafka, serde: new TopicSerde(names), names };
  // Held-out episodes land in the analytics store under a run id of their own, through topics of their own
  // (the loop's verifier, reward and learner must never see them).
  const heldOutRunId = `${runId}-heldout`;
  const heldOutNames = topicNames(`${heldOutRunId}.`);
  const heldOutContext = { kafka: options.kafka, serde: new TopicSerde(heldOutNames), names: heldOutNames };
  // One verifier for both evaluations: each held-out task is admitted (collected, its reference run) once.
  const verifier = evaluationVerifier(held, { pool: options.pool, imageFor, runId: heldOutRunId });
  const evaluate = async (name: string, version: number, params: unknown): Promise<TimedEvaluation> => {
    const started = performance.now();
    const result = await evaluatePolicy(await kind.load(params, version, { decoding }), held, {
      pool: options.pool,
      imageFor,
      runId: heldOutRunId,
      maxTurns: options.maxTurns,
      samplesPerTask: options.evalSamples,
      concurrency: options.evalConcurrency ?? options.llm?.concurrentEpisodes,
      // The same seed for both evaluations: the two policies meet the same random streams on the same tasks.
      seed,
      verifier,
      signal: options.signal,
      onProgress: (done, total) => printProgress(progressLine(`${label}[held-out, ${name}]`, done, total, performance.now() - started)),
    });
    endProgress();
    const seconds = (performance.now() - started) / 1000;
    await landEvaluation(heldOutContext, result.records, { dataDir });
    const { records, ...evaluation } = result;
    return { evaluation, seconds, load: load() };
  };

  // The model server's threads: evalServerThreads while an evaluation runs (the learner is idle then), its share
  // beside the learner while the loop trains (llmThreadShare says why). A server on another machine keeps its own;
  // with the default the two are one count and the server is never restarted for it.
  const serverThreads = async (threads: number, signal?: AbortSignal): Promise<void> => {
    if (evalServerThreads === llmThreadShare()) return;
    await options.weightServer?.useThreads?.(threads, signal ?? new AbortController().signal);
  };
  // The untrained policy is the base model: whatever an earlier run left the server serving is not.
  if (options.weightServer) await serveBaseModel(options.weightServer, options.signal);
  try {
    await serverThreads(evalServerThreads, options.signal);
    const untrained = await evaluate('untrained', 0, kind.initial().params);
    await serverThreads(llmThreadShare(), options.signal);
    const training = await runLoop(context, {
      tasks: options.train,
      dataDir,
      pool: options.pool,
      imageFor,
      checkpoints: options.checkpoints,
      policyId: kind.policyId,
      llm: options.llm,
      ...(options.weightServer ? { weightServer: options.weightServer } : {}),
      ...(options.externalLearner ? { externalLearner: options.externalLearner } : {}),
      runId,
      // Training stops at T even mid-epoch; what was rolled out by then is still verified, rewarded and learned.
      durationMs: options.minutes * 60_000,
      stopRolloutsAfterMs: options.minutes * 60_000,
      timeoutMs: options.minutes * 60_000 + 30 * 60_000,
      groupSize: options.groupSize,
      batchSize: options.batchSize,
      learningRate: options.learningRate,
      epochs: options.epochs,
      maxTurns: options.maxTurns,
      rolloutWorkers: options.rolloutWorkers,
      verifiers: options.verifiers,
      signal: options.signal,
      onProgress: (p) => printProgress(progressLine(`${label}[train epoch ${p.epochs}] rewarded`, p.rewarded, p.expected, p.elapsedMs, `policy v${p.policyVersion}`)),
    });
    endProgress();
    const trainingLoad = load();
    const played = await trainedParams(kind, options.checkpoints, tailAverage);
    await serverThreads(evalServerThreads, options.signal);
    const trained = await evaluate(played.versions.length > 1 ? `trained, mean of ${played.versions.length}` : 'trained', played.versions.at(-1) ?? 0, played.params);
    return {
      runId,
      heldOutRunId,
      policy: kind.policyId,
      minutes: options.minutes,
      maxTurns: options.maxTurns,
      groupSize: options.groupSize,
      batchSize: options.batchSize,
      learningRate: options.learningRate ?? null,
      epochs: options.epochs ?? 1,
      trainTasks: options.train.length,
      heldOutTasks: held.length,
      evalSamples: options.evalSamples,
      seed,
      decoding,
      tailAverage,
      trainedVersions: played.versions,
      untrained,
      trained,
      budgets: budgetComparisons(untrained.evaluation, trained.evaluation, options.maxTurns),
      meanReward: compareMeans(rewardsByTask(untrained.evaluation), rewardsByTask(trained.evaluation)),
      training,
      trainingLoad,
    };
  } finally {
    // The stack's model server is shared: it goes back to the base weights, as it was found, whatever happened here.
    if (options.weightServer) await serveBaseModel(options.weightServer);
    await serverThreads(llmThreadShare());
  }
}

/**
 * Writes the report as `<runId>.json` under TRIALRUN_EXPERIMENTS when it names a store (`s3://bucket/prefix`, put
 * through the storage port, created once: a run id is never reused), else under `<data>/experiments/`; returns
 * where it went (a path, or the object's URI).
 */
export async function saveExperiment(report: ExperimentReport, dataDir: string, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const body = `${JSON.stringify(report, null, 2)}\n`;
  const location = env.TRIALRUN_EXPERIMENTS;
  if (location !== undefined && isS3Url(location)) {
    const store = openBlobStore(location, 'TRIALRUN_EXPERIMENTS', { env });
    try {
      return (await store.put(`${report.runId}.json`, Buffer.from(body), { ifAbsent: true })).uri;
    } finally {
      store.close();
    }
  }
  const out = location ? resolve(location) : join(dataDir, 'experiments');
  mkdirSync(out, { recursive: true });
  const file = join(out, `${report.runId}.json`);
  writeFileSync(file, body);
  return file;
}

const DECODING_WORDS: Record<Decoding, string> = { greedy: 'each choice the most probable one', sample: 'each choice drawn from the policy' };

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
const interval = (i: { low: number; high: number }): string => `[${pct(i.low)}, ${pct(i.high)}]`;
const signed = (x: number): string => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}`;

/** The trained policy as the report names it: `v45`, or `v23-v45 mean` for a tail average. */
export function trainedName(report: Pick<ExperimentReport, 'trained' | 'trainedVersions'>): string {
  const versions = report.trainedVersions;
  return versions.length > 1 ? `v${versions[0]}-v${versions.at(-1)} mean` : `v${report.trained.evaluation.policyVersion}`;
}

/** One line per turn budget: before -> after, each with its 95% interval, the difference and what it says. */
export function formatBudgets(report: Pick<ExperimentReport, 'budgets' | 'trained' | 'trainedVersions'>): string[] {
  const trained = trainedName(report);
  return report.budgets.map((b) => {
    const ratio = b.ratio === null ? '' : ` ${b.ratio.toFixed(2)}x,`;
    return (
      `within ${String(b.turns).padStart(2)} turns: ${pct(b.before.rate)} ${interval(b.before.interval)} -> ${trained} ${pct(b.after.rate)} ${interval(b.after.interval)}` +
      ` (${b.before.episodes} + ${b.after.episodes} episodes, worth ${b.before.effectiveEpisodes.toFixed(0)} + ${b.after.effectiveEpisodes.toFixed(0)} independent ones;${ratio} difference ${signed(b.difference.value)} points, 95% ${signed(b.difference.interval.low)} to ${signed(b.difference.interval.high)}: ${b.verdict})`
    );
  });
}

/** The mean reward line: before -> after with 95% intervals over tasks, the paired difference and what it says. */
export function formatMeanReward(report: Pick<ExperimentReport, 'meanReward' | 'trained' | 'trainedVersions'>): string {
  const m = report.meanReward;
  const value = (x: number): string => x.toFixed(3);
  const range = (i: { low: number; high: number }): string => `[${value(i.low)}, ${value(i.high)}]`;
  const ratio = m.ratio === null ? '' : ` ${m.ratio.toFixed(2)}x,`;
  return (
    `mean reward: ${value(m.before.mean)} ${range(m.before.interval)} -> ${trainedName(report)} ${value(m.after.mean)} ${range(m.after.interval)}` +
    ` (${m.before.units} tasks;${ratio} paired difference ${m.difference.mean >= 0 ? '+' : ''}${value(m.difference.mean)}, 95% ${value(m.difference.interval.low)} to ${value(m.difference.interval.high)}: ${m.verdict})`
  );
}

/** Per stage: records written, rate, and busy time against the time its instances had. */
export function formatThroughput(report: Pick<ExperimentReport, 'training' | 'untrained' | 'trained' | 'trainingLoad'>): string[] {
  const { training } = report;
  const minutes = training.elapsedMs / 60_000;
  const evalLine = (name: string, e: TimedEvaluation): string =>
    `  held-out ${name.padEnd(9)} ${String(e.evaluation.episodes).padStart(5)} episodes in ${e.seconds.toFixed(0)}s (${(e.evaluation.episodes / Math.max(1e-9, e.seconds)).toFixed(2)}/s, load ${e.load.toFixed(1)}, verification included)`;
  return [
    `throughput over ${minutes.toFixed(1)} min of loop (load ${report.trainingLoad.toFixed(1)}; busy = handling time over instances x loop time):`,
    ...Object.entries(training.stages).map(
      ([stage, s]) =>
        `  ${stage.padEnd(16)} ${String(s.records).padStart(5)} records  ${s.perMinute.toFixed(1).padStart(6)}/min  ${s.instances} instance${s.instances === 1 ? ' ' : 's'}  busy ${pct(s.busySeconds / Math.max(1e-9, s.instances * minutes * 60))}` +
        // Per instance, so that one idle instance (half the stage's busy share) is told from two half-idle ones.
        (s.instances > 1 ? ` (each: ${s.perInstance.map((i) => `${pct(i.busySeconds / Math.max(1e-9, minutes * 60))} / ${i.records} records`).join(', ')})` : ''),
    ),
    evalLine('untrained', report.untrained),
    evalLine('trained', report.trained),
  ];
}

/** What the training counts mean, a line each. */
export function formatTrainingCounts(training: LoopSummary, trainedVersions: readonly number[]): string[] {
  const rewards = Object.values(training.rewardDispositions).reduce((a, b) => a + b, 0);
  const noSignal = training.rewardDispositions['no-signal'] ?? 0;
  const learnt = training.rewardDispositions.learn ?? 0;
  const maxTurns = training.outcomes['max-turns'] ?? 0;
  return [
    `trajectories      ${training.trajectories} (${training.epochs} epoch${training.epochs === 1 ? '' : 's'} begun), training pass rate ${pct(training.passRate)}`,
    `no-signal         ${noSignal} of ${rewards} rewards (${pct(rewards ? noSignal / rewards : 0)}) are in groups whose members all passed or all failed: their advantage is 0 and the learner skips them; ${learnt} carried a gradient`,
    `max-turn episodes ${maxTurns} of ${training.trajectories} ran out of tool calls before submitting (the env submits for them; with a scripted policy that is every episode whose last try failed)`,
    `checkpoints       ${training.checkpoints}: one per batch of learnable samples; the held-out evaluation plays ${
      trainedVersions.length > 1 ? `the mean of the newest ${trainedVersions.length} (v${trainedVersions[0]}-v${trainedVersions.at(-1)}, --tail-average)` : 'the newest'
    }`,
  ];
}

/** The whole report: the comparison first, what it means in words, then the counts, the curve and where to look. */
export function formatExperiment(report: ExperimentReport, file: string, sandbox: string): string {
  const { training } = report;
  const last = report.budgets.at(-1);
  const verdict =
    last === undefined
      ? []
      : last.verdict === 'improved'
        ? [`verdict: the trained policy solves more held-out episodes within ${last.turns} turns, and the 95% interval of the difference excludes 0: a real improvement, not noise.`]
        : last.verdict === 'worse'
          ? [`verdict: the trained policy solves fewer held-out episodes within ${last.turns} turns, beyond noise (the 95% interval of the difference is below 0).`]
          : [`verdict: not significant. Within ${last.turns} turns the difference lies inside its 95% interval, which includes 0: this run does not show that the policy improved (more minutes or --eval-samples narrow it).`];
  const reward = report.meanReward;
  const rewardVerdict =
    reward.verdict === 'improved'
      ? 'mean reward: higher after training, and the 95% interval of the paired difference excludes 0.'
      : reward.verdict === 'worse'
        ? 'mean reward: lower after training, beyond noise.'
        : 'mean reward: the paired difference\'s 95% interval includes 0 (not significant).';
  return [
    `${report.runId}: ${report.minutes} min of training on ${report.trainTasks} tasks, ${sandbox} sandboxes (${training.trajectories} trajectories, ${training.checkpoints} checkpoints; groups of ${report.groupSize}, batches of ${report.batchSize}, step ${report.learningRate ?? "the policy's own"}, ${report.epochs} epoch${report.epochs === 1 ? '' : 's'} a batch)`,
    `held-out success on ${report.heldOutTasks} tasks x ${report.evalSamples} episode${report.evalSamples === 1 ? "" : "s"} each (the same tasks and seeds before and after; seed ${report.seed}; ${DECODING_WORDS[report.decoding]}), untrained -> trained, 95% intervals:`,
    ...formatBudgets(report).map((line) => `  ${line}`),
    `  ${formatMeanReward(report)}`,
    ...verdict,
    `verdict, ${rewardVerdict}`,
    ...formatTrainingCounts(training, report.trainedVersions),
    'learning curve (training pass rate and mean reward per policy version, 95% intervals in the notebook):',
    ...training.byPolicyVersion.map((row) => `  v${String(row.policyVersion).padEnd(4)} ${String(row.trajectories).padStart(4)} trajectories  pass ${pct(row.passRate).padStart(6)}  reward ${row.meanReward.toFixed(3)}`),
    ...formatThroughput(report),
    'where to look next:',
    `  trialrun notebook run learning-curve --run ${report.runId} --run ${report.heldOutRunId}   (training and held-out curves with intervals)`,
    `  trialrun sql "SELECT policy_version, count(*), avg(passed::INT) FROM verifications WHERE run_id = '${report.runId}' GROUP BY 1 ORDER BY 1"`,
    `  report ${file}; Parquet files in ${training.dataDir}`,
  ].join('\n');
}
