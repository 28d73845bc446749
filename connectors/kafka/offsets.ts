import type { KafkaAdmin, TopicWatermarks } from './port.js';
import { FAIL_OVER_RETRY } from './topics.js';
import { withRetries } from '../../schemas/index.js';

export type TopicOffsets = TopicWatermarks[];

/**
 * The topic's watermarks. A broker that has not yet learnt of a partition's leader (a topic created a moment
 * ago on another broker, a leader that moved) answers "not the leader": retried as a fail-over is.
 */
export function fetchTopicEnds(admin: KafkaAdmin, topic: string, signal: AbortSignal = new AbortController().signal): Promise<TopicOffsets> {
  return withRetries(() => admin.fetchTopicOffsets(topic), FAIL_OVER_RETRY, signal);
}

const SETTLE_POLL_MS = 100;
const SETTLE_MAX_POLLS = 50;

/**
 * The topic's committed ends (last stable offsets) once they have stopped moving: two polls 100 ms apart
 * agree, or 5 s have passed. A transaction's commit returns once the coordinator has logged it; the
 * markers that make its records readable reach the partitions a little later, so a read that takes the
 * end straight after a commit could stop short of it.
 */
export async function settledTopicOffsets(admin: KafkaAdmin, topic: string): Promise<TopicOffsets> {
  const ends = (offsets: TopicOffsets): string => JSON.stringify(offsets.map((p) => [p.partition, p.high]).sort());
  let last = await fetchTopicEnds(admin, topic);
  for (let stable = 0, polls = 0; stable < 2 && polls < SETTLE_MAX_POLLS; polls++) {
    await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
    const now = await fetchTopicEnds(admin, topic);
    stable = ends(now) === ends(last) ? stable + 1 : 0;
    last = now;
  }
  return last;
}

/**
 * How far a consumer group is behind on a topic: per partition, the last stable offset less the group's
 * committed offset (or less the log start where it committed nothing), and their sum.
 */
export async function groupLag(admin: KafkaAdmin, groupId: string, topic: string): Promise<{ total: number; partitions: Array<{ partition: number; lag: number }> }> {
  const [ends, [committed]] = await Promise.all([fetchTopicEnds(admin, topic), admin.fetchGroupOffsets(groupId, [topic])]);
  const partitions = ends.map(({ partition, low, high }) => {
    const offset = Number(committed?.partitions.find((p) => p.partition === partition)?.offset ?? -1);
    return { partition, lag: Math.max(0, Number(high) - (offset >= 0 ? offset : Number(low))) };
  });
  return { total: partitions.reduce((sum, p) => sum + p.lag, 0), partitions };
}
