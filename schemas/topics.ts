import type { z } from 'zod';
import { DeadLetter } from './dead-letter.js';
import { PolicyCheckpoint, PolicyPin } from './policy-checkpoint.js';
import { Reward } from './reward.js';
import { Task } from './task.js';
import { Trajectory } from './trajectory.js';
import { Verification } from './verification.js';

/** The contract of one topic: what its records are, how they are keyed, and who writes and reads them. */
export interface TopicContract<S extends z.ZodType = z.ZodType> {
  /** Logical name; the physical topic is `<prefix><name>`. */
  readonly name: string;
  readonly schema: S;
  /** Which field of the value is the record key. */
  readonly key: string;
  readonly partitions: number;
  /** Kafka topic configs (cleanup, retention). */
  readonly config: Readonly<Record<string, string>>;
  readonly producers: readonly string[];
  readonly consumers: readonly string[];
  readonly description: string;
}

const WEEK_MS = String(7 * 24 * 3600 * 1000);
const kept = { 'cleanup.policy': 'delete', 'retention.ms': WEEK_MS } as const;
const compacted = { 'cleanup.policy': 'compact' } as const;

export const TOPICS = {
  tasks: {
    name: 'tasks',
    schema: Task,
    key: 'taskId',
    // Room for a lane per partition: one rollout lane takes one task at a time, so the partitions bound the
    // tasks in flight across the rollout group (several lanes per worker, several workers).
    partitions: 12,
    // Compacted: the latest revision of a task is what rollouts and verifiers must use.
    config: compacted,
    producers: ['task-job'],
    consumers: ['rollout-worker', 'verifier (as a table)'],
    description: 'Clean, deduplicated tasks ready to roll out.',
  },
  trajectories: {
    name: 'trajectories',
    schema: Trajectory,
    key: 'taskId',
    partitions: 3,
    config: kept,
    producers: ['rollout-worker'],
    consumers: ['verifier', 'learner', 'analytics-sink'],
    description: 'One record per episode: every step, the final files and the policy decisions.',
  },
  verifications: {
    name: 'verifications',
    schema: Verification,
    key: 'groupId',
    partitions: 3,
    config: kept,
    producers: ['verifier'],
    consumers: ['reward', 'analytics-sink'],
    description: 'Hidden-test verdicts, one per trajectory, keyed by group so a group lands on one partition.',
  },
  rewards: {
    name: 'rewards',
    schema: Reward,
    key: 'trajectoryId',
    partitions: 3,
    config: kept,
    producers: ['reward'],
    consumers: ['learner', 'analytics-sink'],
    description: 'Rewards with group-relative advantages.',
  },
  policyCheckpoints: {
    name: 'policy-checkpoints',
    schema: PolicyCheckpoint,
    key: 'policyId',
    partitions: 1,
    // Compacted: workers only ever need the newest checkpoint of each policy.
    config: compacted,
    producers: ['learner'],
    consumers: ['rollout-worker', 'analytics-sink'],
    description: 'Policy versions with their weights and training metrics.',
  },
  policyPins: {
    name: 'policy-pins',
    schema: PolicyPin,
    key: 'policyId',
    partitions: 1,
    config: compacted,
    producers: ['trialrun policy rollback'],
    consumers: ['rollout-worker'],
    description: 'The version rollout workers must use instead of the newest (a rollback), or null to follow the newest again.',
  },
  deadLetters: {
    name: 'dead-letters',
    schema: DeadLetter,
    key: 'sourceTopic',
    partitions: 1,
    config: kept,
    producers: ['every processor'],
    consumers: ['operators'],
    description: 'Records a processor could not handle, with the original bytes and the reason.',
  },
} as const satisfies Record<string, TopicContract>;

export type TopicKey = keyof typeof TOPICS;
export type TopicValue<K extends TopicKey> = z.infer<(typeof TOPICS)[K]['schema']>;

/** Physical topic names for one deployment; tests use a random prefix so every test has fresh topics. */
export interface TopicNames {
  readonly prefix: string;
  name(key: TopicKey): string;
  /** Internal changelog topic backing a processor's state store. */
  changelog(processor: string, store: string): string;
}

/** @param prefix prepended to every topic name. @default 'trialrun.' */
export function topicNames(prefix = 'trialrun.'): TopicNames {
  if (!/^[a-zA-Z0-9._-]*$/.test(prefix)) {
    throw new Error(`topic prefix "${prefix}" may only hold letters, digits, '.', '_' and '-'`);
  }
  return {
    prefix,
    name: (key) => `${prefix}${TOPICS[key].name}`,
    changelog: (processor, store) => `${prefix}${processor}.${store}.changelog`,
  };
}
