import { settledTopicOffsets } from '../../connectors/kafka/index.js';
import type { Task, TopicKey } from '../../schemas/index.js';
import { AnalyticsSink } from '../analytics-sink/index.js';
import { createLearner } from '../learner/index.js';
import { createRewardProcessor } from '../reward/index.js';
import { createRolloutWorkerLanes, PolicyTracker } from '../rollout-worker/index.js';
import { GlobalTable, prepareTopics, sleep, type Accept, type ProcessorContext, type TypedRecord } from '../runtime/index.js';
import { publishTasks } from '../jobs/task-job/index.js';
import { createVerifierProcessor } from '../verifier/index.js';
import { createWeightSync, serveBaseModel } from '../weight-sync/index.js';
import { committedPastInputs } from './external-learner.js';
import { resolveLoop, type LoopOptions, type LoopProgress, type ResolvedLoop } from './options.js';
import { summarizeLoop, type LoopSummary } from './summary.js';

export type { LoopOptions, LoopProgress } from './options.js';
export type { LoopSummary, PolicyVersionRow, StageThroughput } from './summary.js';


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
 * Builds every processor of the loop (none started yet) over the run's task table and policy tracker: rollout
 * workers that take only the tasks this run publishes and wait on the in-flight bound, verifiers, reward, the
 * learner when the policy trains here, the sink, and weight sync when a server is given.
 */
async function buildProcessors(context: ProcessorContext, options: LoopOptions, resolved: ResolvedLoop, onServed: (version: number) => void) {
  const { runId, groupSize, settings, policyId, envIds, rolloutWorkers, maxInFlight, rolloutWorker, learner: learnerSettings } = resolved;
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
  const ownTask: Accept<'tasks'> = (record) => BigInt(record.offset) >= (ends.tasks.get(record.partition) ?? 0n);
  const ownRecord = (record: TypedRecord<'trajectories' | 'verifications' | 'rewards'>): boolean => record.value.lineage.runId === runId;
  const workers = Array.from({ length: rolloutWorkers }, (_, i) =>
    createRolloutWorkerLanes(context, { ...rolloutWorker, runId, agentProgram: options.agentProgram, pool: options.pool, imageFor: options.imageFor, policies, envIds, trees: options.trees, instanceId: String(i), admit, accept: ownTask }),
  ).flat();
  const verifiers = Array.from({ length: resolved.verifiers }, (_, i) =>
    createVerifierProcessor(context, { runId, pool: options.pool, imageFor: options.imageFor, tasks: tasksTable, trees: options.trees, instanceId: String(i), ...(options.referenceRuns === undefined ? {} : { referenceRuns: options.referenceRuns }), accept: ownRecord }),
  );
  const verifiersDeadLettered = (): number => verifiers.reduce((sum, v) => sum + v.metrics.deadLettered, 0);
  const reward = createRewardProcessor(context, { accept: ownRecord });
  const learner = learnerSettings ? createLearner(context, { ...learnerSettings, runId, store: options.checkpoints, accept: ownRecord }) : null;
  const sink = new AnalyticsSink(context, { dataDir: options.dataDir });
  const weightSync = options.weightServer ? createWeightSync(context, { server: options.weightServer, store: options.checkpoints, policyId, onServed }) : null;
  return { tasksTable, policies, committed, rolledOut, verifiersDeadLettered, ends, workers, verifiers, reward, learner, sink, weightSync };
}

/**
 * The whole loop in one process: publish tasks, roll them out, verify, reward, learn, and land
 * everything in Parquet; returns once every trajectory is rewarded and in the analytics store.
 */
export async function runLoop(context: ProcessorContext, options: LoopOptions): Promise<LoopSummary> {
  const started = performance.now();
  const resolved = await resolveLoop(options);
  const { runId, groupSize, policyId, tasks, external, schedule, batchSize } = resolved;
  await prepareTopics(context);
  let epochs = 0;
  /** Tasks published so far (all epochs), and where the synchronous schedule's next batch starts in `tasks`. */
  let published = 0;
  let cursor = 0;
  const expected = (): number => published * groupSize;

  let servedVersion = 0;
  const { tasksTable, policies, committed, rolledOut, verifiersDeadLettered, ends, workers, verifiers, reward, learner, sink, weightSync } = await buildProcessors(context, options, resolved, (version) => void (servedVersion = version));
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
  /** The version the rollout workers' episodes are sampled by: the one the weight server serves, where there is one. */
  const playing = (): number => (weightSync ? servedVersion : policies.current().version);
  let playingAtLastPublish = Number.NEGATIVE_INFINITY;
  const publish = async (batch: readonly Task[]): Promise<void> => {
    firstPublished ??= performance.now();
    playingAtLastPublish = playing();
    await publishTasks(context.kafka, context.serde, context.names, batch);
    published += batch.length;
  };
  /** Whether the run's budget (time, or updates that the last tasks published were played by) has more tasks to publish. */
  const budgetLeft = (elapsed: number): boolean => elapsed < (options.durationMs ?? 0) || playingAtLastPublish - versionAtStart < resolved.untilVersion;
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
  const deadline = Date.now() + resolved.timeoutMs;
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
        { name: 'rollout-worker', members: workers, topic: context.names.name('tasks'), partitions: ends.tasks.size },
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
        if (cursor !== 0 || budgetLeft(elapsed)) {
          await publishBatch();
          continue;
        }
      }
      if (!rolloutsStopped && elapsed >= (options.stopRolloutsAfterMs ?? Number.POSITIVE_INFINITY)) {
        await Promise.all(workers.map((w) => w.stop()));
        rolloutsStopped = true;
      }
      // The next epoch goes out as soon as the workers run dry, so they never idle while verification catches up.
      if (schedule === 'streaming' && !rolloutsStopped && tasksHandled >= published && budgetLeft(elapsed)) await publishEpoch();
      const batchesLeft = schedule === 'synchronous' && (cursor !== 0 || budgetLeft(elapsed));
      if (!batchesLeft && stillDue().length === 0 && (await externalDone())) break;
      if (Date.now() > deadline) {
        // Worded only here: the poll above runs every 25 ms.
        const waitingOn = [...(batchesLeft ? ["the epoch's remaining batches"] : []), ...stillDue().map(([what, count, wanted]) => `${what} (${count} of ${wanted})`)];
        // Only when all else is done is the external learner asked (externalDone), so it is what is left then.
        if (waitingOn.length === 0) waitingOn.push(externalWaitingOn);
        throw new Error(`the loop did not finish within ${resolved.timeoutMs} ms: ${JSON.stringify(progress())}; still waiting on ${waitingOn.join(', ')}`);
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

  return summarizeLoop({ resolved, dataDir: options.dataDir, started, loopMs, activeMs, epochs, published, committed, landed, workers, verifiers, reward, learner, processors, externalCheckpoints: external !== null });
}
