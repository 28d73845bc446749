import type { KafkaAdmin } from './port.js';
import { ConfigError, resolveRetryOptions, TOPICS, withRetries, type TopicKey, type TopicNames } from '../../schemas/index.js';

export interface TopicSpec {
  readonly topic: string;
  readonly partitions: number;
  readonly config: Readonly<Record<string, string>>;
}

/** The physical topics of the catalog under a given naming (prefix). */
export function catalogTopics(names: TopicNames, keys: readonly TopicKey[] = Object.keys(TOPICS) as TopicKey[]): TopicSpec[] {
  return keys.map((key) => ({ topic: names.name(key), partitions: TOPICS[key].partitions, config: TOPICS[key].config }));
}

/**
 * A leader fail-over (a broker killed while a processor starts) answers metadata, CreateTopics and ListOffsets
 * with retriable errors for a few seconds, as does a broker whose metadata has not yet caught up with a topic
 * created a moment ago: ride it out, 10-20 s in all, rather than refuse the start.
 */
export const FAIL_OVER_RETRY = resolveRetryOptions({ retries: 6, initialDelayMs: 500, maxDelayMs: 5000 });

/**
 * Creates the topics that do not exist yet; existing ones are left as they are (idempotent).
 * Waits for leaders so producers can write as soon as this returns. Each try lists the topics again, so a
 * try that failed after creating some of them goes on with the rest.
 */
export async function ensureTopics(admin: KafkaAdmin, specs: readonly TopicSpec[], signal: AbortSignal = new AbortController().signal): Promise<string[]> {
  return withRetries(async () => {
    const existing = new Set(await admin.listTopics());
    const missing = specs.filter((spec) => !existing.has(spec.topic));
    if (missing.length === 0) return [];
    // Three replicas where the cluster has them (one broker may die without losing an acknowledged record;
    // the brokers' min.insync.replicas says how many must confirm a write), else one per broker.
    const replicationFactor = Math.min(3, await admin.brokerCount());
    await admin.createTopics(missing.map((spec) => ({ topic: spec.topic, partitions: spec.partitions, replicationFactor, config: spec.config })));
    return missing.map((spec) => spec.topic);
  }, FAIL_OVER_RETRY, signal);
}

/**
 * Throws one ConfigError naming every topic of `topics` that does not exist, so a command on a wrong
 * prefix or an unprepared cluster says which topic is missing instead of the broker's "does not host
 * this topic-partition". `hint` ends the message, e.g. how to create them.
 */
export async function requireTopics(admin: KafkaAdmin, topics: readonly string[], hint = ''): Promise<void> {
  const existing = new Set(await admin.listTopics());
  const missing = topics.filter((topic) => !existing.has(topic));
  if (missing.length > 0) throw new ConfigError(`no topic ${missing.map((t) => `"${t}"`).join(', ')}${hint ? `; ${hint}` : ''}`);
}
