import { createKafka } from '../connectors/kafka/index.js';
import { TopicSerde } from '../connectors/registry/index.js';
import type { ProcessorContext } from '../pipelines/runtime/index.js';
import { topicNames } from '../schemas/index.js';

/** Connections for commands that talk to the stack; endpoints come from the environment. */
export function processorContext(env: NodeJS.ProcessEnv = process.env): ProcessorContext {
  const names = topicNames(env.TRIALRUN_TOPIC_PREFIX ?? 'trialrun.');
  return { kafka: createKafka(), serde: new TopicSerde(names), names };
}
