import { checkBrokers, createKafka } from '../connectors/kafka/index.js';
import { TopicSerde } from '../connectors/registry/index.js';
import type { ProcessorContext } from '../pipelines/runtime/index.js';
import { topicNames, type TopicNames } from '../schemas/index.js';

/** The catalog's topic names under TRIALRUN_TOPIC_PREFIX (default `trialrun.`); needs no connection. */
export function topicNamesFromEnv(env: NodeJS.ProcessEnv = process.env): TopicNames {
  return topicNames(env.TRIALRUN_TOPIC_PREFIX ?? 'trialrun.');
}

/**
 * Connections for commands that talk to the stack; endpoints come from the environment. The brokers are
 * checked once, with a bounded timeout, so an unreachable Kafka is one clear error within seconds.
 */
export async function processorContext(env: NodeJS.ProcessEnv = process.env): Promise<ProcessorContext> {
  const names = topicNamesFromEnv(env);
  await checkBrokers();
  return { kafka: createKafka(), serde: new TopicSerde(names), names };
}
