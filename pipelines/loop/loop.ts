import { prepareTopics, sleep, type ProcessorContext } from '../runtime/index.js';
import { serveBaseModel } from '../weight-sync/index.js';
import { drainLoop, type Drained } from './drain.js';
import { resolveLoop, type LoopOptions } from './options.js';
import { buildProcessors } from './processors.js';
import { summarizeLoop, type LoopSummary } from './summary.js';

export type { LoopOptions, LoopProgress } from './options.js';
export type { LoopSummary, PolicyVersionRow, StageThroughput } from './summary.js';

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
 * The whole loop in one process: publish tasks, roll them out, verify, reward, learn, and land everything in
 * Parquet; returns once every trajectory is rewarded and in the analytics store. It reads resolve (options.ts)
 * -> build and start (processors.ts, here) -> drain (drain.ts) -> stop, here, whatever happened -> summarize (summary.ts).
 */
export async function runLoop(context: ProcessorContext, options: LoopOptions): Promise<LoopSummary> {
  const started = performance.now();
  const resolved = await resolveLoop(options);
  const { external } = resolved;
  await prepareTopics(context);
  const processors = await buildProcessors(context, options, resolved);
  const { tasksTable, policies, ends, workers, verifiers, all } = processors;
  const signal = options.signal ?? new AbortController().signal;
  let drained: Drained;
  let loopMs = 0;
  let externalStopped: PromiseSettledResult<void> | undefined;
  try {
    // The server starts on the base model; weight sync then applies this run's newest checkpoint, if it has one.
    if (options.weightServer) await serveBaseModel(options.weightServer, signal);
    // Every processor starts, or none is left running: a refused start (a bad option, a broker that is down)
    // stops the ones that did start, in the finally below.
    const starts = await Promise.allSettled([...all.map((p) => p.start()), ...(external ? [external.start()] : [])]);
    const refused = starts.find((start): start is PromiseRejectedResult => start.status === 'rejected');
    if (refused) throw refused.reason;
    const versionAtStart = policies.current().version;
    const unsplit = await balancedGroups(
      [
        { name: 'rollout-worker', members: workers, topic: context.names.name('tasks'), partitions: ends.tasks.size },
        { name: 'verifier', members: verifiers, topic: context.names.name('trajectories'), partitions: ends.trajectories.size },
      ],
      signal,
    );
    if (unsplit.length > 0) process.emitWarning(`the ${unsplit.join(' and ')} group${unsplit.length > 1 ? 's have' : ' has'} not split its partitions among its instances after ${BALANCE_WAIT_MS / 1000} s; publishing anyway`, 'TrialrunWarning');
    drained = await drainLoop({ context, options, resolved, processors, started, versionAtStart, signal });
  } finally {
    loopMs = performance.now() - started;
    await Promise.allSettled(all.map((p) => p.stop()));
    externalStopped = (await Promise.allSettled([external?.stop()]))[0];
    await Promise.allSettled([tasksTable.close(), policies.close()]);
  }
  // Reached only when the loop itself succeeded: then a learner that failed to stop cleanly fails the run.
  if (externalStopped?.status === 'rejected') throw externalStopped.reason;

  const { committed, landed, reward, learner } = processors;
  return summarizeLoop({ resolved, dataDir: options.dataDir, started, loopMs, ...drained, committed, landed, workers, verifiers, reward, learner, processors: all, externalCheckpoints: external !== null });
}
