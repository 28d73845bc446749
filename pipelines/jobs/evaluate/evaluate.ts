import { inTransaction } from '../../../connectors/kafka/index.js';
import type { SandboxPool } from '../../../connectors/sandbox/index.js';
import { ENVIRONMENTS, makeEnv, type RepairObservation } from '../../../envs/index.js';
import { seededRandom, type Policy } from '../../../policies/index.js';
import { ConfigError, mapLimit, nowIso, resolveRetryOptions, TimeoutError, withRetries, type Task, type Trajectory, type Verification } from '../../../schemas/index.js';
import { AnalyticsSink } from '../../analytics-sink/index.js';
import { prepareTopics, type ProcessorContext } from '../../runtime/index.js';
import { runEpisode } from '../../rollout-worker/index.js';
import { Verifier } from '../../verifier/index.js';

export interface EvaluateOptions {
  pool: SandboxPool;
  imageFor: (recipe: string) => string;
  /** @default 'eval' */
  runId?: string;
  /** Episodes per task. @default 2 */
  samplesPerTask?: number;
  /** Tool calls per episode ("success within N turns"). @default 14 */
  maxTurns?: number;
  /** Episodes at once. @default 2 */
  concurrency?: number;
  /** Seeds the episodes, so two policies are compared on the same random streams. @default 'eval' */
  seed?: string;
  signal?: AbortSignal;
  onProgress?: (done: number, total: number) => void;
  /**
   * The verifier that judges the episodes. Give two evaluations of the same tasks one verifier: each task is
   * admitted (its tests collected, its reference solution run `referenceRuns` times) once, not once per
   * evaluation; with one episode per task that admission costs four sandbox runs against the episode's one.
   * @default a new Verifier for `runId`, `pool` and `imageFor` over `tasks`
   */
  verifier?: Verifier;
}

/** One verifier for evaluations over `tasks`: pass it as `EvaluateOptions.verifier` to each, so each task is admitted once. */
export function evaluationVerifier(tasks: readonly Task[], options: Pick<EvaluateOptions, 'pool' | 'imageFor' | 'runId'>): Verifier {
  const byId = new Map(tasks.map((task) => [task.taskId, task]));
  return new Verifier({
    runId: options.runId ?? 'eval',
    pool: options.pool,
    imageFor: options.imageFor,
    tasks: {
      get: (id: string) => {
        const task = byId.get(id);
        if (!task) throw new ConfigError(`evaluation verifier: task ${id} is not among the ${byId.size} tasks it was made for`);
        return task;
      },
    },
  });
}

export interface Evaluation {
  readonly policyVersion: number;
  readonly episodes: number;
  readonly successes: number;
  readonly successRate: number;
  /** Mean reward of the episodes under their tasks' RewardSpec (partial credit where a task gives it). */
  readonly meanReward: number;
  readonly byTask: Readonly<Record<string, TaskEvaluation>>;
  /** `successesWithin[n]`: episodes solved in at most n tool calls (n = 0..maxTurns), the success rate within fewer turns. */
  readonly successesWithin: readonly number[];
  /** Every episode's trajectory and verdict, in task order (for `landEvaluation`). */
  readonly records: readonly EvaluatedEpisode[];
}

/** One task's episodes in an evaluation. */
export interface TaskEvaluation {
  readonly episodes: number;
  readonly successes: number;
  /** The tool calls each solved episode took (its successes within fewer turns). */
  readonly solvedIn: readonly number[];
  /** Each episode's reward, in attempt order (the same order in two evaluations with the same seed). */
  readonly rewards: readonly number[];
}

export interface EvaluatedEpisode {
  readonly trajectory: Trajectory;
  readonly verification: Verification;
}

const RETRY = resolveRetryOptions({ retries: 2, initialDelayMs: 1000, maxDelayMs: 10_000 });

/**
 * Success rate of a policy on held-out tasks within N turns: every episode runs in a fresh sandbox and is
 * judged by the verifier (hidden tests), exactly as in training, but nothing is published or learned.
 */
export async function evaluatePolicy(policy: Policy<RepairObservation>, tasks: readonly Task[], options: EvaluateOptions): Promise<Evaluation> {
  const samples = options.samplesPerTask ?? 2;
  const signal = options.signal ?? new AbortController().signal;
  const runId = options.runId ?? 'eval';
  const verifier = options.verifier ?? evaluationVerifier(tasks, options);
  const jobs = tasks.flatMap((task) => Array.from({ length: samples }, (_, attempt) => ({ task, attempt })));
  const byTask: Record<string, { episodes: number; successes: number; solvedIn: number[]; rewards: number[] }> = {};
  const records: EvaluatedEpisode[] = new Array(jobs.length);
  const maxTurns = options.maxTurns ?? 14;
  const successesWithin: number[] = new Array(maxTurns + 1).fill(0);
  let done = 0;
  // A failure (foreign weights below, a sandbox that stays down) ends the evaluation: no episode starts after it.
  await mapLimit(jobs, Math.max(1, options.concurrency ?? 2), async ({ task, attempt }, index) => {
    // The random stream depends on the seed, task and attempt only, so two policies meet the same streams;
    // the trajectory id also names the version, so the two evaluations' records never share an id.
    const stream = `${options.seed ?? 'eval'}/${task.taskId}/${attempt}`;
    const trajectoryId = `${stream}@v${policy.version}`;
    // A transient sandbox failure (the engine restarting, say) reruns the episode, as the rollout worker would.
    const episode = await withRetries(async (): Promise<EvaluatedEpisode> => {
      const env = makeEnv(task.envId, { pool: options.pool, runId, imageFor: options.imageFor, maxTurns });
      const played = await runEpisode(ENVIRONMENTS.get(task.envId), env, () => env.init(task, signal), policy as Policy<unknown>, seededRandom(stream), signal);
      const trajectory: Trajectory = {
        trajectoryId, groupId: trajectoryId, groupSize: 1, envId: task.envId, policyId: policy.policyId, steps: played.steps, finalFiles: played.finalFiles, finalExtras: played.finalExtras,
        outcome: played.outcome, error: null, totalMs: played.totalMs, sandboxMs: played.sandboxMs,
        lineage: { taskId: task.taskId, attempt, runId, policyVersion: policy.version, sandboxImageDigest: played.imageDigest, verifierVersion: null, createdAt: nowIso() },
      };
      return { trajectory, verification: await verifier.verify(trajectory, signal) };
    }, RETRY, signal);
    const foreign = foreignWeights(episode.trajectory, policy.version);
    if (foreign) {
      throw new ConfigError(`evaluating v${policy.version}: ${foreign}; make the model server serve v${policy.version} first (weight sync, or trialrun policy rollback)`);
    }
    records[index] = episode;
    const { verification } = episode;
    const entry = (byTask[task.taskId] ??= { episodes: 0, successes: 0, solvedIn: [], rewards: new Array(samples).fill(0) });
    entry.episodes++;
    entry.rewards[attempt] = verification.score ?? (verification.passed ? 1 : 0);
    if (verification.passed) {
      entry.successes++;
      entry.solvedIn.push(episode.trajectory.steps.length);
      for (let n = episode.trajectory.steps.length; n <= maxTurns; n++) successesWithin[n]!++;
    }
    options.onProgress?.(++done, jobs.length);
  });
  const successes = Object.values(byTask).reduce((sum, t) => sum + t.successes, 0);
  const rewardSum = Object.values(byTask).reduce((sum, t) => sum + t.rewards.reduce((a, b) => a + b, 0), 0);
  return { policyVersion: policy.version, episodes: jobs.length, successes, successRate: jobs.length ? successes / jobs.length : 0, meanReward: jobs.length ? rewardSum / jobs.length : 0, byTask, successesWithin, records };
}

/**
 * Why an episode does not belong to an evaluation of `version`, or null when it does: a language model's turns
 * name the weights that answered them (LlmCall.policyVersion), and an evaluation of one version holds no other's.
 */
export function foreignWeights(trajectory: Pick<Trajectory, 'steps' | 'lineage'>, version: number): string | null {
  const step = trajectory.steps.find(({ llm }) => llm && llm.policyVersion !== null && llm.policyVersion !== version);
  return step ? `turn ${step.index} of ${trajectory.lineage.taskId} was answered by the weights of v${step.llm!.policyVersion}` : null;
}

export interface LandOptions {
  /** The analytics store. */
  dataDir: string;
  /** Records per produce request. @default 16 */
  batchSize?: number;
  /** Give up waiting for the rows to land after this long. @default 120000 */
  timeoutMs?: number;
}

/**
 * Puts evaluation episodes where every other trajectory goes: onto the trajectories and verifications
 * topics of `context` (in one transaction), and from there into the analytics store through an analytics
 * sink, so notebooks and SQL read them like training runs (by their own run id). Give `context` topics of
 * their own: a running verifier, reward or learner must not take evaluation episodes for training ones.
 */
export async function landEvaluation(context: ProcessorContext, episodes: readonly EvaluatedEpisode[], options: LandOptions): Promise<void> {
  const { kafka, serde, names } = context;
  await prepareTopics(context);
  const size = options.batchSize ?? 16;
  await inTransaction(kafka, `${names.prefix}evaluation`, async (transaction) => {
    for (let i = 0; i < episodes.length; i += size) {
      const chunk = episodes.slice(i, i + size);
      await transaction.sendBatch([
        { topic: names.name('trajectories'), messages: await Promise.all(chunk.map(async ({ trajectory }) => ({ key: trajectory.lineage.taskId, value: await serde.encode('trajectories', trajectory) }))) },
        { topic: names.name('verifications'), messages: await Promise.all(chunk.map(async ({ verification }) => ({ key: verification.groupId, value: await serde.encode('verifications', verification) }))) },
      ]);
    }
  });
  const sink = new AnalyticsSink(context, { dataDir: options.dataDir, topics: ['trajectories', 'verifications'] });
  await sink.start();
  try {
    const deadline = Date.now() + (options.timeoutMs ?? 120_000);
    // Counted per run: records an earlier, interrupted landing left on these topics may land first.
    const expected = new Map<string, number>();
    for (const { trajectory } of episodes) expected.set(trajectory.lineage.runId, (expected.get(trajectory.lineage.runId) ?? 0) + 1);
    const allLanded = (): boolean =>
      [...expected].every(([runId, count]) => sink.rowsLanded('trajectories', runId) >= count && sink.rowsLanded('verifications', runId) >= count);
    while (!allLanded()) {
      if (Date.now() > deadline) throw new TimeoutError(`landing ${episodes.length} evaluation episodes in ${options.dataDir}`, options.timeoutMs ?? 120_000);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } finally {
    await sink.stop();
  }
}
