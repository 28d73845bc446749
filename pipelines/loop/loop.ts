import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { AnalyticsCatalog } from '../../connectors/analytics/index.js';
import type { TreeStore } from '../../connectors/artifacts/index.js';
import type { CheckpointStore } from '../../connectors/checkpoints/index.js';
import type { WeightServer } from '../../connectors/llm/index.js';
import { settledTopicOffsets } from '../../connectors/kafka/index.js';
import type { SandboxPool } from '../../connectors/sandbox/index.js';
import { ENVIRONMENTS, type AgentProgramDeps } from '../../envs/index.js';
import { LINEAR_REPAIR_POLICY, policyKindFor, type ResolvedLlmPolicyOptions } from '../../policies/index.js';
import { ConfigError, TOPICS, type Task, type TopicKey } from '../../schemas/index.js';
import { AnalyticsSink } from '../analytics-sink/index.js';
import { createLearner } from '../learner/index.js';
import { createRewardProcessor } from '../reward/index.js';
import { createRolloutWorkerLanes, llmTaskTimeoutMs, PolicyTracker } from '../rollout-worker/index.js';
import { GlobalTable, prepareTopics, sleep, type Accept, type ProcessorContext, type TypedRecord } from '../runtime/index.js';
import { prepareTasks, publishTasks } from '../jobs/task-job/index.js';
import { createVerifierProcessor } from '../verifier/index.js';
import { createWeightSync, serveBaseModel } from '../weight-sync/index.js';
import { committedPastInputs, type ExternalLearner } from './external-learner.js';

export interface LoopOptions {
  /** JSON Lines task file (read by the task job); ignored when `tasks` is given. */
  taskFile?: string;
  /** Tasks already prepared by a data job. @default the valid rows of `taskFile` */
  tasks?: readonly Task[];
  /** The agent program of environments whose agent is one (agent-command/v1), for every rollout worker. @default none */
  agentProgram?: AgentProgramDeps;
  /** Where Parquet files and rejects go. */
  dataDir: string;
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

export interface LoopProgress {
  readonly expected: number;
  readonly epochs: number;
  readonly rolledOut: number;
  readonly verified: number;
  readonly rewarded: number;
  readonly policyVersion: number;
  readonly elapsedMs: number;
}

export interface PolicyVersionRow {
  readonly policyVersion: number;
  readonly trajectories: number;
  readonly passRate: number;
  /** Mean reward under the tasks' RewardSpec (partial credit where a task gives it). */
  readonly meanReward: number;
}

/** What one stage of the loop achieved: records it wrote, their rate over the loop's time, and how busy its instances were. */
export interface StageThroughput {
  readonly instances: number;
  readonly records: number;
  readonly perMinute: number;
  /** Handling time summed over its instances, in seconds: near instances x elapsed, the stage was the bound. */
  readonly busySeconds: number;
  /** Records and handling seconds of each instance, in instance order: an idle instance shows here, not in the sums. */
  readonly perInstance: readonly { readonly records: number; readonly busySeconds: number }[];
}

export interface LoopSummary {
  readonly runId: string;
  readonly tasks: number;
  readonly epochs: number;
  readonly rejectedRows: number;
  readonly trajectories: number;
  readonly passRate: number;
  /** Mean reward of the run's verifications under the tasks' RewardSpec. */
  readonly meanReward: number;
  readonly byPolicyVersion: readonly PolicyVersionRow[];
  readonly checkpoints: number;
  readonly sandboxSeconds: number;
  /** Per stage: rollout-worker (trajectories), verifier (verifications), reward (rewards), learner (checkpoints). */
  readonly stages: Readonly<Record<string, StageThroughput>>;
  /** Rewards by disposition: `learn`, and `no-signal` for members of groups whose rewards were all equal (no gradient). */
  readonly rewardDispositions: Readonly<Record<string, number>>;
  /** Trajectories by outcome: `max-turns` ran out of tool calls before submitting. */
  readonly outcomes: Readonly<Record<string, number>>;
  readonly recordsPerTopic: Readonly<Record<string, number>>;
  readonly deadLetters: number;
  readonly dataDir: string;
  readonly rejectsFile: string | null;
  readonly elapsedMs: number;
  /** From the first task published to the last record landed: the loop's working time, start-up left out. */
  readonly activeMs: number;
  /** Time the learner spent handling records (joining and training), summed. */
  readonly learnerBusyMs: number;
}

/** For each topic, the offset the next record of each of its partitions will get (its settled last stable offset). */
async function topicEnds<K extends TopicKey>(context: ProcessorContext, keys: readonly K[]): Promise<Record<K, Map<number, bigint>>> {
  const admin = context.kafka.admin();
  await admin.connect();
  try {
    const ends = {} as Record<K, Map<number, bigint>>;
    for (const key of keys) ends[key] = new Map((await settledTopicOffsets(admin, context.names.name(key))).map((p) => [p.partition, BigInt(p.high)]));
    return ends;
  } finally {
    await admin.disconnect();
  }
}

/** A consumer group of the loop: its members in this process and the partitions of the topic they split. */
interface LoopGroup {
  readonly name: string;
  readonly members: readonly { readonly assignment: ReadonlyArray<{ readonly topic: string; readonly partition: number }> }[];
  readonly topic: string;
  readonly partitions: number;
}

/** How long the loop waits for its groups to split their partitions before it publishes anyway (and warns). */
const BALANCE_WAIT_MS = 30_000;

/**
 * Waits until every group's members hold all of its topic's partitions between them, as many members holding some
 * as there are partitions to go round. A group's first member to join takes every partition, and the others join
 * at its next rebalance; the confluent client serves that rebalance only once it has handed over the records it
 * already fetched, so tasks published before then queue on the first member, and its siblings idle for the whole
 * run. Returns the groups still unsplit after `timeoutMs`.
 */
async function balancedGroups(groups: readonly LoopGroup[], signal: AbortSignal, timeoutMs = BALANCE_WAIT_MS): Promise<string[]> {
  const unbalanced = (): string[] =>
    groups
      .filter(({ members, topic, partitions }) => {
        const held = members.map((m) => m.assignment.filter((p) => p.topic === topic).length);
        return held.reduce((sum, n) => sum + n, 0) < partitions || held.filter((n) => n > 0).length < Math.min(members.length, partitions);
      })
      .map((group) => group.name);
  const deadline = Date.now() + timeoutMs;
  while (unbalanced().length > 0 && Date.now() < deadline) await sleep(100, signal);
  return unbalanced();
}

/**
 * The whole loop in one process: publish tasks, roll them out, verify, reward, learn, and land
 * everything in Parquet; returns once every trajectory is rewarded and in the analytics store.
 */
export async function runLoop(context: ProcessorContext, options: LoopOptions): Promise<LoopSummary> {
  const started = performance.now();
  const runId = options.runId ?? randomUUID();
  const groupSize = options.groupSize ?? 4;
  const settings = { llm: options.llm };
  const policyId = options.policyId ?? LINEAR_REPAIR_POLICY;
  // Checked before anything is published: an llm policy without its settings stops here.
  policyKindFor(policyId, [], settings);

  let rejectedRows = 0;
  let rejectsFile: string | null = null;
  let source = options.tasks;
  if (!source) {
    if (!options.taskFile) throw new ConfigError('LoopOptions: give either tasks or taskFile');
    const prepared = await prepareTasks({ file: options.taskFile, rejectsDir: join(options.dataDir, 'rejects'), jobRunId: runId });
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
  const trainable = trainedBy === true;
  const external = trainedBy === 'external' ? (options.externalLearner ?? null) : null;
  const schedule = options.schedule ?? 'streaming';
  if (schedule !== 'streaming' && schedule !== 'synchronous') throw new ConfigError(`LoopOptions.schedule must be 'streaming' or 'synchronous', got ${String(schedule)}`);
  const batchSize = options.batchSize ?? 16;
  if (schedule === 'synchronous' && (!trainable || batchSize % groupSize !== 0)) {
    throw new ConfigError(`LoopOptions.schedule 'synchronous' needs a policy trained in this process and a batchSize (${batchSize}) that is a multiple of groupSize (${groupSize})`);
  }
  const concurrentEpisodes = options.concurrentEpisodes ?? options.llm?.concurrentEpisodes ?? 1;
  if (!Number.isInteger(concurrentEpisodes) || concurrentEpisodes < 1) throw new ConfigError(`LoopOptions.concurrentEpisodes must be a whole number >= 1, got ${concurrentEpisodes}`);
  // Checked before anything is opened: a refusal past this point would leave the task table and tracker open.
  const rolloutWorkers = options.rolloutWorkers ?? 2;
  const tasksPerWorker = options.tasksPerWorker ?? 1;
  if (!Number.isInteger(tasksPerWorker) || tasksPerWorker < 1) throw new ConfigError(`LoopOptions.tasksPerWorker must be a whole number >= 1, got ${tasksPerWorker}`);
  const verifierCount = options.verifiers ?? 2;
  if (!Number.isInteger(verifierCount) || verifierCount < 1) throw new ConfigError(`LoopOptions.verifiers must be a whole number >= 1, got ${verifierCount}`);
  const maxInFlight = options.maxInFlight ?? Math.max(2 * batchSize, groupSize * rolloutWorkers * tasksPerWorker);
  if (!Number.isInteger(maxInFlight) || maxInFlight < groupSize) throw new ConfigError(`LoopOptions.maxInFlight must be a whole number >= groupSize (${groupSize}), got ${maxInFlight}`);
  await prepareTopics(context);
  let epochs = 0;
  /** Tasks published so far (all epochs), and where the synchronous schedule's next batch starts in `tasks`. */
  let published = 0;
  let cursor = 0;
  const expected = (): number => published * groupSize;

  const tasksTable = await GlobalTable.load(context.kafka, context.serde, context.names, 'tasks');
  const policies = await PolicyTracker.follow(context.kafka, context.serde, context.names, { store: options.checkpoints, policyId: options.policyId, settings });
  const committed = (processor: { metrics: { committed: ReadonlyMap<string, number> } }, key: TopicKey): number => processor.metrics.committed.get(context.names.name(key)) ?? 0;
  // Called by the workers only once every processor below exists and runs.
  // A dead-lettered trajectory or verification never gets its reward: it is not in flight any more.
  const inFlight = (): number => rolledOut() - committed(reward, 'rewards') - verifiersDeadLettered() - reward.metrics.deadLettered;
  const rolledOut = (): number => workers.reduce((sum, w) => sum + committed(w, 'trajectories'), 0);
  const admit = async (signal: AbortSignal): Promise<void> => {
    while (inFlight() + groupSize > maxInFlight) await sleep(100, signal);
  };
  // The topics and consumer groups outlive a run: an interrupted run leaves tasks, trajectories and
  // verifications behind that the next run's groups would otherwise pick up as their own. This run takes
  // the tasks it publishes (past the ends below) and the records its lineage names.
  // The trajectories' partitions are read with them: the balanced start below waits for the verifiers to split them.
  const ends = await topicEnds(context, ['tasks', 'trajectories']);
  const ownTasksFrom = ends.tasks;
  const ownTask: Accept<'tasks'> = (record) => BigInt(record.offset) >= (ownTasksFrom.get(record.partition) ?? 0n);
  const ownRecord = (record: TypedRecord<'trajectories' | 'verifications' | 'rewards'>): boolean => record.value.lineage.runId === runId;
  const workers = Array.from({ length: rolloutWorkers }, (_, i) =>
    createRolloutWorkerLanes(context, { runId, agentProgram: options.agentProgram, pool: options.pool, imageFor: options.imageFor, policies, envIds, trees: options.trees, groupSize, maxTurns: options.maxTurns, instanceId: String(i), concurrency: concurrentEpisodes, lanes: tasksPerWorker, timeoutMs: options.llm ? llmTaskTimeoutMs(options.llm, groupSize) : undefined, admit, accept: ownTask }),
  ).flat();
  const verifiers = Array.from({ length: verifierCount }, (_, i) =>
    createVerifierProcessor(context, { runId, pool: options.pool, imageFor: options.imageFor, tasks: tasksTable, trees: options.trees, instanceId: String(i), ...(options.referenceRuns === undefined ? {} : { referenceRuns: options.referenceRuns }), accept: ownRecord }),
  );
  const verifiersDeadLettered = (): number => verifiers.reduce((sum, v) => sum + v.metrics.deadLettered, 0);
  const reward = createRewardProcessor(context, { accept: ownRecord });
  const learner = trainable
    ? createLearner(context, { runId, store: options.checkpoints, policyId: options.policyId, batchSize, learningRate: options.learningRate, epochs: options.epochs, maxStaleness: options.maxStaleness, accept: ownRecord })
    : null;
  const sink = new AnalyticsSink(context, { dataDir: options.dataDir });
  let servedVersion = 0;
  const weightSync = options.weightServer ? createWeightSync(context, { server: options.weightServer, store: options.checkpoints, policyId, onServed: (version) => void (servedVersion = version) }) : null;
  /**
   * The external learner's part of the end condition: it has committed past every input (checked again only when
   * a count moved: each check reads both topics), the sink landed its checkpoints, and weight sync serves the newest.
   * `externalWaitingOn` says which of these the last check found missing, for the deadline's error.
   */
  let externalCheckedAt = '';
  let externalWaitingOn = "the external learner's commits past every input";
  const externalDone = async (): Promise<boolean> => {
    if (external === null) return true;
    const counts = `${landed('trajectories')}/${landed('rewards')}/${landed('checkpoints')}/${servedVersion}`;
    if (counts === externalCheckedAt) return false;
    if (!(await committedPastInputs(context, external.groupId))) {
      externalWaitingOn = `the external learner's commits past every input (its group ${external.groupId} is behind)`;
      return false;
    }
    const newest = (await options.checkpoints.list(policyId)).at(-1)?.version ?? versionAtStart;
    const landedAll = landed('checkpoints') >= newest - versionAtStart;
    const served = weightSync === null || servedVersion >= newest;
    // Not done: the same counts are not checked again until one moves (the learner commits, the server restarts).
    if (!landedAll || !served) {
      externalCheckedAt = counts;
      externalWaitingOn = [
        ...(landedAll ? [] : [`the external learner's checkpoints in the sink (${landed('checkpoints')} of ${newest - versionAtStart} in the store)`]),
        ...(served ? [] : [`weight sync serving v${newest} (serves v${servedVersion})`]),
      ].join(', ');
    }
    return landedAll && served;
  };
  const processors = [...workers, ...verifiers, reward, ...(learner ? [learner] : []), sink, ...(weightSync ? [weightSync] : [])];
  let firstPublished: number | null = null;
  const publish = async (batch: readonly Task[]): Promise<void> => {
    firstPublished ??= performance.now();
    await publishTasks(context.kafka, context.serde, context.names, batch);
    published += batch.length;
  };
  const publishEpoch = async (): Promise<void> => {
    await publish(tasks);
    epochs++;
  };
  // The synchronous schedule's unit: one learner batch of tasks, published once the previous one is learned from.
  const publishBatch = async (): Promise<void> => {
    if (cursor === 0) epochs++;
    const batch = tasks.slice(cursor, cursor + batchSize / groupSize);
    cursor = (cursor + batch.length) % tasks.length;
    await publish(batch);
  };
  let versionAtStart = 0;

  const progress = (): LoopProgress => ({
    expected: expected(),
    epochs,
    rolledOut: rolledOut(),
    verified: verifiers.reduce((sum, v) => sum + v.metrics.outputs, 0),
    rewarded: reward.metrics.outputs,
    policyVersion: policies.current().version,
    elapsedMs: performance.now() - started,
  });
  const landed = (table: string): number => sink.rowsLanded(table, runId);
  /**
   * The records the run's trajectories should yield downstream. A dead-lettered record's downstream records never
   * come: a task's whole group, a trajectory's verification and reward.
   */
  const dueFrom = (trajectories: number) => {
    const verifications = trajectories - verifiersDeadLettered();
    return { trajectories, verifications, rewards: verifications - reward.metrics.deadLettered };
  };
  const trajectoriesOfPublished = (): number => expected() - groupSize * workers.reduce((sum, w) => sum + w.metrics.deadLettered, 0);
  /**
   * The synchronous barrier: every published task rolled out, every sample verified and rewarded, the learner has
   * handled them all, and the rollout workers serve every version it published.
   */
  const batchLearned = (tasksHandled: number): boolean => {
    if (tasksHandled < published) return false;
    const due = dueFrom(trajectoriesOfPublished());
    if (rolledOut() < due.trajectories || committed(reward, 'rewards') < due.rewards || learner === null) return false;
    if (learner.metrics.handled < due.trajectories + due.rewards) return false;
    return policies.current().version - versionAtStart >= committed(learner, 'policyCheckpoints');
  };
  let rolloutsStopped = false;
  /** What the end condition still waits on: [what, count, wanted] (none once every record due has landed and been learned from). */
  const stillDue = (): Array<[string, number, number]> => {
    const { trajectories: trajectoriesDue, verifications: verificationsDue, rewards: rewardsDue } = dueFrom(rolloutsStopped ? rolledOut() : trajectoriesOfPublished());
    const due: Array<[string, number, number]> = [
      ['trajectories landed in the sink', landed('trajectories'), trajectoriesDue],
      ['verifications landed in the sink', landed('verifications'), verificationsDue],
      ['rewards landed in the sink', landed('rewards'), rewardsDue],
      ...(learner === null
        ? []
        : ([
            ['trajectories and rewards handled by the learner', learner.metrics.handled, trajectoriesDue + rewardsDue],
            ['checkpoints landed in the sink', landed('checkpoints'), learner.metrics.outputs - learner.metrics.deadLettered],
          ] as Array<[string, number, number]>)),
    ];
    return due.filter(([, count, wanted]) => count < wanted);
  };
  const deadline = Date.now() + (options.timeoutMs ?? 1_800_000);
  const signal = options.signal ?? new AbortController().signal;
  let lastReport = 0;
  let loopMs = 0;
  let activeMs = 0;
  let externalStopped: PromiseSettledResult<void> | undefined;
  try {
    // The server starts on the base model; weight sync then applies this run's newest checkpoint, if it has one.
    if (options.weightServer) await serveBaseModel(options.weightServer, signal);
    // Every processor starts, or none is left running: a refused start (a bad option, a broker that is down)
    // stops the ones that did start, in the finally below.
    const starts = await Promise.allSettled([...processors.map((p) => p.start()), ...(external ? [external.start()] : [])]);
    const refused = starts.find((start): start is PromiseRejectedResult => start.status === 'rejected');
    if (refused) throw refused.reason;
    versionAtStart = policies.current().version;
    const unsplit = await balancedGroups(
      [
        { name: 'rollout-worker', members: workers, topic: context.names.name('tasks'), partitions: ownTasksFrom.size },
        { name: 'verifier', members: verifiers, topic: context.names.name('trajectories'), partitions: ends.trajectories.size },
      ],
      signal,
    );
    if (unsplit.length > 0) process.emitWarning(`the ${unsplit.join(' and ')} group${unsplit.length > 1 ? 's have' : ' has'} not split its partitions among its instances after ${BALANCE_WAIT_MS / 1000} s; publishing anyway`, 'TrialrunWarning');
    if (schedule === 'streaming') await publishEpoch();
    else await publishBatch();
    // Done when every trajectory, verification and reward has landed, and the learner has seen them all.
    for (;;) {
      const learnerFailure = external?.failure();
      if (learnerFailure) throw learnerFailure;
      const tasksHandled = workers.reduce((sum, w) => sum + w.metrics.handled, 0);
      const elapsed = performance.now() - started;
      if (schedule === 'synchronous' && batchLearned(tasksHandled)) {
        // The next batch, while the epoch has tasks left or the run's time does.
        if (cursor !== 0 || elapsed < (options.durationMs ?? 0)) {
          await publishBatch();
          continue;
        }
      }
      if (!rolloutsStopped && elapsed >= (options.stopRolloutsAfterMs ?? Number.POSITIVE_INFINITY)) {
        await Promise.all(workers.map((w) => w.stop()));
        rolloutsStopped = true;
      }
      // The next epoch goes out as soon as the workers run dry, so they never idle while verification catches up.
      if (schedule === 'streaming' && !rolloutsStopped && tasksHandled >= published && elapsed < (options.durationMs ?? 0)) await publishEpoch();
      const batchesLeft = schedule === 'synchronous' && (cursor !== 0 || elapsed < (options.durationMs ?? 0));
      if (!batchesLeft && stillDue().length === 0 && (await externalDone())) break;
      if (Date.now() > deadline) {
        // Worded only here: the poll above runs every 25 ms.
        const waitingOn = [...(batchesLeft ? ["the epoch's remaining batches"] : []), ...stillDue().map(([what, count, wanted]) => `${what} (${count} of ${wanted})`)];
        // Only when all else is done is the external learner asked (externalDone), so it is what is left then.
        if (waitingOn.length === 0) waitingOn.push(externalWaitingOn);
        throw new Error(`the loop did not finish within ${options.timeoutMs ?? 1_800_000} ms: ${JSON.stringify(progress())}; still waiting on ${waitingOn.join(', ')}`);
      }
      if (options.onProgress && performance.now() - lastReport >= (options.progressIntervalMs ?? 2000)) {
        lastReport = performance.now();
        options.onProgress(progress());
      }
      // The synchronous schedule waits on every batch: a coarse poll would be its own idle time.
      await sleep(schedule === 'synchronous' ? 25 : 250, signal);
    }
    options.onProgress?.(progress());
    activeMs = performance.now() - (firstPublished ?? started);
  } finally {
    loopMs = performance.now() - started;
    await Promise.allSettled(processors.map((p) => p.stop()));
    externalStopped = (await Promise.allSettled([external?.stop()]))[0];
    await Promise.allSettled([tasksTable.close(), policies.close()]);
  }
  // Reached only when the loop itself succeeded: then a learner that failed to stop cleanly fails the run.
  if (externalStopped?.status === 'rejected') throw externalStopped.reason;

  const catalog = await AnalyticsCatalog.open(options.dataDir);
  try {
    const scalar = async (sql: string): Promise<number> => Number((await catalog.query(sql)).rows[0]?.[0] ?? 0);
    const run = `'${runId.replaceAll("'", "''")}'`;
    const byVersion = await catalog.query(
      `SELECT t.policy_version, count(*) AS n, avg(CASE WHEN v.passed THEN 1 ELSE 0 END) AS pass_rate, avg(v.score) AS mean_reward
       FROM trajectories t JOIN verifications v USING (trajectory_id)
       WHERE t.run_id = ${run} GROUP BY 1 ORDER BY 1`,
    );
    const counts = async (table: string, column: string): Promise<Record<string, number>> =>
      Object.fromEntries((await catalog.query(`SELECT ${column}, count(*) FROM ${table} WHERE run_id = ${run} GROUP BY 1 ORDER BY 1`)).rows.map(([key, n]) => [String(key), Number(n)]));
    const stage = (members: readonly { metrics: { busyMs: number; committed: ReadonlyMap<string, number> } }[], key: TopicKey): StageThroughput => {
      const perInstance = members.map((m) => ({ records: committed(m, key), busySeconds: m.metrics.busyMs / 1000 }));
      const records = perInstance.reduce((sum, m) => sum + m.records, 0);
      const busySeconds = perInstance.reduce((sum, m) => sum + m.busySeconds, 0);
      return { instances: members.length, records, perMinute: records / Math.max(1e-9, loopMs / 60_000), busySeconds, perInstance };
    };
    const stages: Record<string, StageThroughput> = {
      'rollout-worker': stage(workers, 'trajectories'),
      verifier: stage(verifiers, 'verifications'),
      reward: stage([reward], 'rewards'),
      ...(learner ? { learner: stage([learner], 'policyCheckpoints') } : {}),
      // The external learner's checkpoints, counted in the store (its handling time is in each checkpoint's metrics).
      ...(external
        ? { learner: { instances: 1, records: landed('checkpoints'), perMinute: landed('checkpoints') / Math.max(1e-9, loopMs / 60_000), busySeconds: 0, perInstance: [{ records: landed('checkpoints'), busySeconds: 0 }] } }
        : {}),
    };
    const recordsPerTopic: Record<string, number> = { tasks: published };
    for (const table of ['trajectories', 'verifications', 'rewards', 'checkpoints']) {
      recordsPerTopic[table === 'checkpoints' ? TOPICS.policyCheckpoints.name : table] = await scalar(`SELECT count(*) FROM ${table} WHERE run_id = ${run}`);
    }
    return {
      runId,
      tasks: tasks.length,
      epochs,
      rejectedRows,
      trajectories: await scalar(`SELECT count(*) FROM trajectories WHERE run_id = ${run}`),
      passRate: await scalar(`SELECT avg(CASE WHEN passed THEN 1 ELSE 0 END) FROM verifications WHERE run_id = ${run}`),
      meanReward: await scalar(`SELECT avg(score) FROM verifications WHERE run_id = ${run}`),
      byPolicyVersion: byVersion.rows.map(([version, n, rate, reward]) => ({ policyVersion: Number(version), trajectories: Number(n), passRate: Number(rate), meanReward: Number(reward) })),
      checkpoints: recordsPerTopic[TOPICS.policyCheckpoints.name] ?? 0,
      stages,
      rewardDispositions: await counts('rewards', "coalesce(disposition, 'learn')"),
      outcomes: await counts('trajectories', 'outcome'),
      sandboxSeconds: (await scalar(`SELECT sum(sandbox_ms) FROM trajectories WHERE run_id = ${run}`)) / 1000 + (await scalar(`SELECT sum(duration_ms) FROM verifications WHERE run_id = ${run}`)) / 1000,
      recordsPerTopic,
      deadLetters: processors.reduce((sum, p) => sum + p.metrics.deadLettered, 0),
      dataDir: options.dataDir,
      rejectsFile,
      elapsedMs: performance.now() - started,
      activeMs,
      learnerBusyMs: learner?.metrics.busyMs ?? 0,
    };
  } finally {
    catalog.close();
  }
}
