import { AnalyticsCatalog, summarizeRun } from '../../connectors/analytics/index.js';
import { TOPICS, type TopicKey } from '../../schemas/index.js';
import type { ResolvedLoop } from './options.js';

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

/** What summarizing reads of a processor: its handling time, its commits per topic and its dead letters. */
export interface MeasuredProcessor {
  readonly metrics: { readonly busyMs: number; readonly committed: ReadonlyMap<string, number>; readonly deadLettered: number };
}

/** What a finished loop hands to its summary. */
export interface FinishedLoop {
  readonly resolved: ResolvedLoop;
  readonly dataDir: string;
  /** performance.now() when the loop started, and its time: all of it, and from the first task published. */
  readonly started: number;
  readonly loopMs: number;
  readonly activeMs: number;
  readonly epochs: number;
  /** Tasks published, all epochs. */
  readonly published: number;
  readonly committed: (processor: MeasuredProcessor, key: TopicKey) => number;
  /** Rows of this run the sink landed in a table. */
  readonly landed: (table: string) => number;
  readonly workers: readonly MeasuredProcessor[];
  readonly verifiers: readonly MeasuredProcessor[];
  readonly reward: MeasuredProcessor;
  readonly learner: MeasuredProcessor | null;
  readonly processors: readonly MeasuredProcessor[];
  /** The learner runs outside this process: its checkpoints are counted in the store. */
  readonly externalCheckpoints: boolean;
}

/** The loop's summary: each stage's throughput from its processors, and what the run landed from the analytics store. */
export async function summarizeLoop(loop: FinishedLoop): Promise<LoopSummary> {
  const { resolved, committed, landed, loopMs } = loop;
  const stage = (members: readonly MeasuredProcessor[], key: TopicKey): StageThroughput => {
    const perInstance = members.map((m) => ({ records: committed(m, key), busySeconds: m.metrics.busyMs / 1000 }));
    const records = perInstance.reduce((sum, m) => sum + m.records, 0);
    const busySeconds = perInstance.reduce((sum, m) => sum + m.busySeconds, 0);
    return { instances: members.length, records, perMinute: records / Math.max(1e-9, loopMs / 60_000), busySeconds, perInstance };
  };
  const stages: Record<string, StageThroughput> = {
    'rollout-worker': stage(loop.workers, 'trajectories'),
    verifier: stage(loop.verifiers, 'verifications'),
    reward: stage([loop.reward], 'rewards'),
    ...(loop.learner ? { learner: stage([loop.learner], 'policyCheckpoints') } : {}),
    // The external learner's checkpoints, counted in the store (its handling time is in each checkpoint's metrics).
    ...(loop.externalCheckpoints
      ? { learner: { instances: 1, records: landed('checkpoints'), perMinute: landed('checkpoints') / Math.max(1e-9, loopMs / 60_000), busySeconds: 0, perInstance: [{ records: landed('checkpoints'), busySeconds: 0 }] } }
      : {}),
  };
  const catalog = await AnalyticsCatalog.open(loop.dataDir);
  try {
    const run = await summarizeRun(catalog, resolved.runId);
    const recordsPerTopic: Record<string, number> = {
      tasks: loop.published,
      trajectories: run.rows.trajectories,
      verifications: run.rows.verifications,
      rewards: run.rows.rewards,
      [TOPICS.policyCheckpoints.name]: run.rows.checkpoints,
    };
    return {
      runId: resolved.runId,
      tasks: resolved.tasks.length,
      epochs: loop.epochs,
      rejectedRows: resolved.rejectedRows,
      trajectories: run.rows.trajectories,
      passRate: run.passRate,
      meanReward: run.meanReward,
      byPolicyVersion: run.byPolicyVersion,
      checkpoints: run.rows.checkpoints,
      stages,
      rewardDispositions: run.rewardDispositions,
      outcomes: run.outcomes,
      sandboxSeconds: run.sandboxSeconds,
      recordsPerTopic,
      deadLetters: loop.processors.reduce((sum, p) => sum + p.metrics.deadLettered, 0),
      dataDir: loop.dataDir,
      rejectsFile: resolved.rejectsFile,
      elapsedMs: performance.now() - loop.started,
      activeMs: loop.activeMs,
      learnerBusyMs: loop.learner?.metrics.busyMs ?? 0,
    };
  } finally {
    catalog.close();
  }
}
