import { settledTopicOffsets } from '../../connectors/kafka/index.js';
import type { TopicKey } from '../../schemas/index.js';
import { AnalyticsSink } from '../analytics-sink/index.js';
import { createLearner } from '../learner/index.js';
import { createRewardProcessor } from '../reward/index.js';
import { createRolloutWorkerLanes, PolicyTracker } from '../rollout-worker/index.js';
import { GlobalTable, sleep, type Accept, type ProcessorContext, type TypedRecord } from '../runtime/index.js';
import { createVerifierProcessor } from '../verifier/index.js';
import { createWeightSync } from '../weight-sync/index.js';
import type { LoopOptions, ResolvedLoop } from './options.js';

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

/**
 * Builds every processor of the loop (none started yet) over the run's task table and policy tracker: rollout
 * workers that take only the tasks this run publishes and wait on the in-flight bound, verifiers, reward, the
 * learner when the policy trains here, the sink, and weight sync when a server is given.
 */
export async function buildProcessors(context: ProcessorContext, options: LoopOptions, resolved: ResolvedLoop) {
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
  // The trajectories' partitions are read with them: the balanced start (runLoop) waits for the verifiers to split them.
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
  /** Rows of this run the sink landed in a table. */
  const landed = (table: string): number => sink.rowsLanded(table, runId);
  let servedVersion = 0;
  const weightSync = options.weightServer ? createWeightSync(context, { server: options.weightServer, store: options.checkpoints, policyId, onServed: (version) => void (servedVersion = version) }) : null;
  /** The version weight sync last put on the server (0 before it serves one, and without weight sync). */
  const served = (): number => servedVersion;
  const all = [...workers, ...verifiers, reward, ...(learner ? [learner] : []), sink, ...(weightSync ? [weightSync] : [])];
  return { tasksTable, policies, committed, rolledOut, verifiersDeadLettered, landed, served, ends, workers, verifiers, reward, learner, sink, weightSync, all };
}

/** The loop's processors, built and not yet started, with the counts read of them. */
export type LoopProcessors = Awaited<ReturnType<typeof buildProcessors>>;
