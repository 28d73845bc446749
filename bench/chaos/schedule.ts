/**
 * The chaos run's schedule: which part dies when, and for how long, drawn from one seed so a run can be repeated.
 * Each target dies exactly once, in a seeded order; the gap before each kill and the time it stays down are
 * seeded too, within ranges that suit the target (a processor restarts in seconds, a broker is left down long
 * enough for its partitions' leadership to move).
 */
import { seededRandom } from '../../policies/index.js';

/** The processors the chaos run starts as their own `trialrun run` processes. */
export const CHAOS_PROCESSORS = ['rollout-worker', 'verifier', 'reward', 'learner', 'analytics-sink'] as const;
export type ChaosProcessor = (typeof CHAOS_PROCESSORS)[number];

/** Everything the chaos run can SIGKILL: each processor, one broker of its cluster, its Docker engine, its model server. */
export const CHAOS_TARGETS = [...CHAOS_PROCESSORS, 'broker', 'docker-engine', 'model-server'] as const;
export type ChaosTarget = (typeof CHAOS_TARGETS)[number];

/** How long a target stays dead before it is started again, in milliseconds: [least, most). */
const DOWN_MS: Readonly<Record<ChaosTarget, readonly [number, number]>> = {
  'rollout-worker': [500, 4_000],
  verifier: [500, 4_000],
  reward: [500, 4_000],
  learner: [500, 4_000],
  'analytics-sink': [500, 4_000],
  // Past the brokers' session timeout, so the controller moves the dead broker's leaderships.
  broker: [10_000, 20_000],
  'docker-engine': [3_000, 10_000],
  'model-server': [2_000, 6_000],
};

export interface ScheduledKill {
  readonly target: ChaosTarget;
  /** Wait after the previous kill's target is back (or after the start) before this kill. */
  readonly gapMs: number;
  /** How long the target stays dead. */
  readonly downMs: number;
  /** Which broker dies (1-based node id), drawn for the broker kill only. */
  readonly brokerNode?: number;
}

export interface ChaosScheduleOptions {
  readonly seed: string;
  /** Each dies once; their order is drawn. */
  readonly targets: readonly ChaosTarget[];
  /** The mean gap before a kill; each gap is drawn from half to one and a half times it. */
  readonly meanGapMs: number;
  /** Brokers in the cluster, one of which the broker kill picks. */
  readonly brokers: number;
}

/** The kills of one run, in order: the same seed and options give the same schedule. */
export function chaosSchedule(options: ChaosScheduleOptions): ScheduledKill[] {
  if (new Set(options.targets).size !== options.targets.length) throw new Error(`chaosSchedule: a target is listed twice (${options.targets.join(', ')})`);
  if (!(options.meanGapMs > 0)) throw new Error(`chaosSchedule: meanGapMs must be positive, got ${options.meanGapMs}`);
  const random = seededRandom(`chaos:${options.seed}`);
  const between = ([least, most]: readonly [number, number]): number => Math.round(least + random() * (most - least));
  // Fisher-Yates on a copy: the order of the kills.
  const order = [...options.targets];
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order.map((target) => ({
    target,
    gapMs: between([options.meanGapMs / 2, (options.meanGapMs * 3) / 2]),
    downMs: between(DOWN_MS[target]),
    ...(target === 'broker' ? { brokerNode: 1 + Math.floor(random() * options.brokers) } : {}),
  }));
}

/** The targets of a run: every processor, a broker and the engine, and the model server when the policy needs one. */
export function chaosTargets(withModelServer: boolean): ChaosTarget[] {
  return CHAOS_TARGETS.filter((target) => target !== 'model-server' || withModelServer);
}
