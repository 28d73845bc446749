import { LoopDeadlineError, type Task } from '../../schemas/index.js';
import { publishTasks } from '../jobs/task-job/index.js';
import { sleep, type ProcessorContext } from '../runtime/index.js';
import { committedPastInputs } from './external-learner.js';
import type { LoopOptions, LoopProgress, ResolvedLoop } from './options.js';
import type { LoopProcessors } from './processors.js';

/** What the drain is given: the loop's processors, started, and where it stood when they were. */
export interface DrainStart {
  readonly context: ProcessorContext;
  readonly options: LoopOptions;
  readonly resolved: ResolvedLoop;
  readonly processors: LoopProcessors;
  /** performance.now() when the loop started: the origin of its progress's elapsed time and of its time-based options. */
  readonly started: number;
  /** The policy version the rollout workers served once every processor had started. */
  readonly versionAtStart: number;
  readonly signal: AbortSignal;
}

/** What a finished drain hands to the summary. */
export interface Drained {
  readonly epochs: number;
  /** Tasks published, all epochs. */
  readonly published: number;
  /** From the first task published to the end. */
  readonly activeMs: number;
}

/**
 * Publishes the run's tasks (an epoch at a time while streaming, a learner batch at a time when synchronous,
 * again while `durationMs` or `untilVersion` lasts) and waits until every record they are due to yield has
 * landed and been learned from, stopping the rollout workers after `stopRolloutsAfterMs`. Throws the external
 * learner's failure, or an Error that says what is still due once `timeoutMs` has passed; the caller stops the
 * processors either way.
 */
export async function drainLoop({ context, options, resolved, processors, started, versionAtStart, signal }: DrainStart): Promise<Drained> {
  const { groupSize, policyId, tasks, external, schedule, batchSize } = resolved;
  const { policies, committed, rolledOut, verifiersDeadLettered, landed, served, workers, verifiers, reward, learner, weightSync } = processors;
  let epochs = 0;
  /** Tasks published so far (all epochs), and where the synchronous schedule's next batch starts in `tasks`. */
  let published = 0;
  let cursor = 0;
  const expected = (): number => published * groupSize;

  let firstPublished: number | null = null;
  /** The version the rollout workers' episodes are sampled by: the one the weight server serves, where there is one. */
  const playing = (): number => (weightSync ? served() : policies.current().version);
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

  /**
   * The external learner's part of the end condition: it has committed past every input (checked again only when
   * a count moved: each check reads both topics), the sink landed its checkpoints, and weight sync serves the newest.
   * `externalWaitingOn` says which of these the last check found missing, for the deadline's error.
   */
  let externalCheckedAt = '';
  let externalWaitingOn = "the external learner's commits past every input";
  const externalDone = async (): Promise<boolean> => {
    if (external === null) return true;
    const counts = `${landed('trajectories')}/${landed('rewards')}/${landed('checkpoints')}/${served()}`;
    if (counts === externalCheckedAt) return false;
    if (!(await committedPastInputs(context, external.groupId))) {
      externalWaitingOn = `the external learner's commits past every input (its group ${external.groupId} is behind)`;
      return false;
    }
    const newest = (await options.checkpoints.list(policyId)).at(-1)?.version ?? versionAtStart;
    const landedAll = landed('checkpoints') >= newest - versionAtStart;
    const servesNewest = weightSync === null || served() >= newest;
    // Not done: the same counts are not checked again until one moves (the learner commits, the server restarts).
    if (!landedAll || !servesNewest) {
      externalCheckedAt = counts;
      externalWaitingOn = [
        ...(landedAll ? [] : [`the external learner's checkpoints in the sink (${landed('checkpoints')} of ${newest - versionAtStart} in the store)`]),
        ...(servesNewest ? [] : [`weight sync serving v${newest} (serves v${served()})`]),
      ].join(', ');
    }
    return landedAll && servesNewest;
  };

  const progress = (): LoopProgress => ({
    expected: expected(),
    epochs,
    rolledOut: rolledOut(),
    verified: verifiers.reduce((sum, v) => sum + v.metrics.outputs, 0),
    rewarded: reward.metrics.outputs,
    policyVersion: policies.current().version,
    elapsedMs: performance.now() - started,
  });
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
  let lastReport = 0;
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
      throw new LoopDeadlineError(resolved.timeoutMs, progress(), waitingOn);
    }
    if (options.onProgress && performance.now() - lastReport >= (options.progressIntervalMs ?? 2000)) {
      lastReport = performance.now();
      options.onProgress(progress());
    }
    // The synchronous schedule waits on every batch: a coarse poll would be its own idle time.
    await sleep(schedule === 'synchronous' ? 25 : 250, signal);
  }
  options.onProgress?.(progress());
  return { epochs, published, activeMs: performance.now() - (firstPublished ?? started) };
}
