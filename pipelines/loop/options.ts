import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { TreeStore } from '../../connectors/artifacts/index.js';
import type { CheckpointStore } from '../../connectors/checkpoints/index.js';
import type { WeightServer } from '../../connectors/llm/index.js';
import type { SandboxPool } from '../../connectors/sandbox/index.js';
import { ENVIRONMENTS, type AgentProgramDeps } from '../../envs/index.js';
import { LINEAR_REPAIR_POLICY, policyKindFor, type ResolvedLlmPolicyOptions } from '../../policies/index.js';
import { ConfigError, requireOption, wholeNumber, type Task } from '../../schemas/index.js';
import { prepareTasks } from '../jobs/task-job/index.js';
import { LEARNER_DEFAULTS, resolveLearner, type ResolvedLearner } from '../learner/index.js';
import { resolveRolloutWorker, type ResolvedRolloutWorker } from '../rollout-worker/index.js';
import type { ExternalLearner } from './external-learner.js';

export interface LoopOptions {
  /** JSON Lines task file (read by the task job); ignored when `tasks` is given. */
  taskFile?: string;
  /** Tasks already prepared by a data job. @default the valid rows of `taskFile` */
  tasks?: readonly Task[];
  /** The agent program of environments whose agent is one (agent-command/v1), for every rollout worker. @default none */
  agentProgram?: AgentProgramDeps;
  /** Where Parquet files and rejects go. */
  dataDir: string;
  /** Where the rejects file of `taskFile`'s task job goes: a folder or `s3://bucket/prefix`. @default `<dataDir>/rejects` */
  rejectsDir?: string;
  pool: SandboxPool;
  imageFor: (recipe: string) => string;
  /** Where the learner writes checkpoint artifacts and workers read them. */
  checkpoints: CheckpointStore;
  /** The policy kind rolled out and trained. @default 'linear-repair' */
  policyId?: string;
  /**
   * The llm policy's server and sampling settings (required with policyId 'llm'). Its episodes run
   * `concurrentEpisodes` at a time per rollout worker; it is trained by `externalLearner` (its weights are the server's).
   * @default none
   */
  llm?: ResolvedLlmPolicyOptions;
  /**
   * The learner of a kind whose `trainable` is 'external' (the llm policy: the Python LLM learner), run as a
   * process on this loop's topics and checkpoint store instead of the in-process learner. The loop is done once
   * it has committed past every trajectory and reward and weight sync (when given) serves its newest checkpoint.
   * @default none: such a kind is rolled out and not trained
   */
  externalLearner?: ExternalLearner;
  /**
   * The inference server weight sync keeps on the policy's newest (or pinned) checkpoint; with it the loop runs
   * the weight-sync processor, so rollouts sample the weights the learner trained. @default none (no weight sync)
   */
  weightServer?: WeightServer;
  /**
   * The artifact store for trees kept out of records (claim checks): tasks' stored trees are read from it and large
   * final trees written to it. @default none (every tree must be inline)
   */
  trees?: TreeStore;
  /** @default a random UUID */
  runId?: string;
  /** Use only the first N valid tasks. @default all */
  limitTasks?: number;
  /** Samples per task. @default 4 */
  groupSize?: number;
  /** Tool calls per episode. @default 14 */
  maxTurns?: number;
  /** Rollout worker instances (each a group member with its own transactional producer). @default 2 */
  rolloutWorkers?: number;
  /**
   * Tasks each rollout worker rolls out at once (RolloutLanesOptions.lanes): a slow task then holds up one lane,
   * not the worker. Lanes of all workers beyond the tasks topic's partitions get no tasks. One by default: on
   * a 2-core machine more lanes add sandboxes competing for the same CPU (docs/loop.md measures both). @default 1
   */
  tasksPerWorker?: number;
  /** Episodes of one task (of its G samples) a rollout worker runs at once. @default the llm policy's concurrentEpisodes, else 1 */
  concurrentEpisodes?: number;
  /**
   * How rollouts and learning interleave. 'streaming': every stage runs at once, tasks flow as fast as the
   * in-flight bound lets them, and the learner trains on each batch as it completes. 'synchronous': the seed's
   * batch loop, driven through the same processors: publish one batch of tasks (batchSize / groupSize), roll it
   * all out, verify, reward, train, wait until the rollout workers serve the new policy, then the next batch.
   * @default 'streaming'
   */
  schedule?: 'streaming' | 'synchronous';
  /**
   * Verifier instances (group members, each with its own transactional producer, splitting the trajectory
   * partitions). Verification runs the hidden tests several times per trajectory and is the loop's slowest
   * stage; one instance per core keeps the rollout workers from waiting on it. @default 2
   */
  verifiers?: number;
  /** Runs of each task's reference solution before its verifications count (VerifierOptions.referenceRuns; 0 admits every task). @default 3 */
  referenceRuns?: number;
  /** Samples per learner update. @default 16 */
  batchSize?: number;
  /** The learner's Adam step size. @default the policy kind's own */
  learningRate?: number;
  /** The learner's ascent steps per batch (LearnerOptions.epochs). @default 1 */
  epochs?: number;
  /** Samples whose policy version lags the learner's by more than this are dropped (LearnerOptions.maxStaleness). @default 4 */
  maxStaleness?: number;
  /**
   * Trajectories rolled out but not yet rewarded, at most: a rollout worker waits before its next task while
   * this many are in flight. Rollouts outpace verification here, and without a bound the backlog grows until
   * every sample is older than the learner's staleness bound by the time it arrives.
   * @default 2 * batchSize, and at least one group per rollout lane (rolloutWorkers x tasksPerWorker)
   */
  maxInFlight?: number;
  /** Keep publishing the tasks again (another epoch) until this much time has passed. @default 0 (one epoch) */
  durationMs?: number;
  /**
   * Keep publishing epochs (or batches) until one goes out while the rollout workers play this many versions past
   * the run's start (with a weight server: the version it serves), so its episodes are sampled by a trained policy:
   * a training budget in updates rather than in time. Either budget keeps the run going. @default 0 (none)
   */
  untilVersion?: number;
  /**
   * Stop the rollout workers after this long (episodes in flight are abandoned, not published), then finish
   * what was rolled out: verify, reward, learn and land it, and return. For a training budget in time on a
   * task set whose epoch would take longer. @default never
   */
  stopRolloutsAfterMs?: number;
  /** Give up after this long. @default 1800000 */
  timeoutMs?: number;
  /** Stops the loop gracefully (processors stop, sandboxes are released) and rejects with ShutdownError. @default never */
  signal?: AbortSignal;
  /** Called every `progressIntervalMs` with counts so far. */
  onProgress?: (progress: LoopProgress) => void;
  /** @default 2000 */
  progressIntervalMs?: number;
}

/** What the loop reports while it runs (`LoopOptions.onProgress`). */
export interface LoopProgress {
  readonly expected: number;
  readonly epochs: number;
  readonly rolledOut: number;
  readonly verified: number;
  readonly rewarded: number;
  readonly policyVersion: number;
  readonly elapsedMs: number;
}

/** A loop's options with their defaults, checked, and its tasks read: everything decided before anything starts. */
export interface ResolvedLoop {
  readonly runId: string;
  readonly groupSize: number;
  readonly policyId: string;
  readonly settings: { readonly llm: ResolvedLlmPolicyOptions | undefined };
  readonly tasks: readonly Task[];
  /** Rows of `taskFile` the task job rejected or dropped as duplicates, and where it wrote why. */
  readonly rejectedRows: number;
  readonly rejectsFile: string | null;
  /** Every environment the tasks name, registered and served by the policy. */
  readonly envIds: readonly string[];
  /** The learner outside this process, for a policy trained there (llm). */
  readonly external: ExternalLearner | null;
  readonly schedule: 'streaming' | 'synchronous';
  readonly batchSize: number;
  readonly rolloutWorkers: number;
  readonly verifiers: number;
  readonly maxInFlight: number;
  readonly untilVersion: number;
  readonly timeoutMs: number;
  /** Every rollout worker's settings (concurrency: concurrentEpisodes; lanes: tasksPerWorker; each worker's instance id is its index). */
  readonly rolloutWorker: ResolvedRolloutWorker;
  /** The in-process learner's settings; null when the policy is not trained in this process. */
  readonly learner: ResolvedLearner | null;
}

/**
 * Resolves and checks a loop's options, and reads its tasks (the task job, for a `taskFile`); each refusal is a
 * ConfigError naming the option, and comes before any topic, table or processor is touched.
 */
export async function resolveLoop(options: LoopOptions): Promise<ResolvedLoop> {
  const runId = options.runId ?? randomUUID();
  const concurrentEpisodes = wholeNumber('LoopOptions.concurrentEpisodes', options.concurrentEpisodes ?? options.llm?.concurrentEpisodes ?? 1, { min: 1 });
  const rolloutWorkers = wholeNumber('LoopOptions.rolloutWorkers', options.rolloutWorkers ?? 2, { min: 1 });
  const tasksPerWorker = wholeNumber('LoopOptions.tasksPerWorker', options.tasksPerWorker ?? 1, { min: 1 });
  const verifiers = wholeNumber('LoopOptions.verifiers', options.verifiers ?? 2, { min: 1 });
  // The stages' own settings are checked by the stages' own resolvers, here, before the task file is read.
  const rolloutWorker = resolveRolloutWorker({ groupSize: options.groupSize, maxTurns: options.maxTurns, concurrency: concurrentEpisodes, lanes: tasksPerWorker, llm: options.llm });
  const { groupSize } = rolloutWorker;
  const settings = { llm: options.llm };
  const policyId = options.policyId ?? LINEAR_REPAIR_POLICY;
  // Checked before anything is published: an llm policy without its settings stops here.
  policyKindFor(policyId, [], settings);

  let rejectedRows = 0;
  let rejectsFile: string | null = null;
  let source = options.tasks;
  if (!source) {
    if (!options.taskFile) throw new ConfigError('LoopOptions: give either tasks or taskFile');
    const prepared = await prepareTasks({ file: options.taskFile, rejectsDir: options.rejectsDir ?? join(options.dataDir, 'rejects'), jobRunId: runId });
    rejectedRows = prepared.rejected + prepared.duplicates;
    rejectsFile = prepared.rejectsFile;
    source = prepared.tasks;
  }
  const tasks = source.slice(0, options.limitTasks ?? source.length);
  if (tasks.length === 0) throw new ConfigError('LoopOptions: there are no tasks to run');
  // Every environment the tasks name must be registered and served by the policy, before anything starts.
  const envIds = [...new Set(tasks.map((task) => ENVIRONMENTS.get(task.envId).id))];
  const trainedBy = policyKindFor(policyId, envIds, settings).trainable ?? true;
  if (options.externalLearner && trainedBy !== 'external') throw new ConfigError(`LoopOptions.externalLearner goes with a policy trained outside this process (llm), not ${policyId}`);
  const schedule = options.schedule ?? 'streaming';
  if (schedule !== 'streaming' && schedule !== 'synchronous') throw new ConfigError(`LoopOptions.schedule must be 'streaming' or 'synchronous', got ${String(schedule)}`);
  const batchSize = options.batchSize ?? LEARNER_DEFAULTS.batchSize;
  const learner = trainedBy === true ? resolveLearner({ policyId, batchSize, learningRate: options.learningRate, epochs: options.epochs, maxStaleness: options.maxStaleness }) : null;
  if (schedule === 'synchronous' && (trainedBy !== true || batchSize % groupSize !== 0)) {
    throw new ConfigError(`LoopOptions.schedule 'synchronous' needs a policy trained in this process and a batchSize (${batchSize}) that is a multiple of groupSize (${groupSize})`);
  }
  const maxInFlight = options.maxInFlight ?? Math.max(2 * batchSize, groupSize * rolloutWorkers * tasksPerWorker);
  requireOption(Number.isSafeInteger(maxInFlight) && maxInFlight >= groupSize, 'LoopOptions.maxInFlight', `a whole number >= groupSize (${groupSize})`, maxInFlight);
  const untilVersion = wholeNumber('LoopOptions.untilVersion', options.untilVersion ?? 0, { min: 0 });
  // A policy that nobody trains here never reaches a version: the run would publish epochs until its deadline.
  const trainedHere = trainedBy === true || (trainedBy === 'external' && options.externalLearner !== undefined);
  if (untilVersion > 0 && !trainedHere) throw new ConfigError(`LoopOptions.untilVersion needs a policy this run trains (${policyId} has ${trainedBy === 'external' ? 'no externalLearner' : 'no learner'})`);
  return {
    runId,
    groupSize,
    policyId,
    settings,
    tasks,
    rejectedRows,
    rejectsFile,
    envIds,
    external: trainedBy === 'external' ? (options.externalLearner ?? null) : null,
    schedule,
    batchSize,
    rolloutWorkers,
    verifiers,
    maxInFlight,
    untilVersion,
    timeoutMs: options.timeoutMs ?? 1_800_000,
    rolloutWorker,
    learner,
  };
}
