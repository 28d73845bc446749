import { checkBrokers, createKafka, requireTopics } from '../connectors/kafka/index.js';
import { TopicSerde } from '../connectors/registry/index.js';
import type { ProcessorContext } from '../pipelines/runtime/index.js';
import { ConfigError, errorMessage, topicNames, type TopicKey, type TopicNames } from '../schemas/index.js';

/** The catalog's topic names under TRIALRUN_TOPIC_PREFIX (default `trialrun.`); needs no connection. */
export function topicNamesFromEnv(env: NodeJS.ProcessEnv = process.env): TopicNames {
  const prefix = env.TRIALRUN_TOPIC_PREFIX ?? 'trialrun.';
  // Set but empty is a variable that expanded to nothing, not a wish for unprefixed topics.
  if (prefix === '') throw new ConfigError('TRIALRUN_TOPIC_PREFIX is set but empty; unset it for the default trialrun., or give a prefix such as exp1.');
  try {
    return topicNames(prefix);
  } catch (error) {
    throw new ConfigError(`TRIALRUN_TOPIC_PREFIX: ${errorMessage(error)}`, { cause: error });
  }
}

/**
 * Connections for commands that talk to the stack; endpoints come from the environment. The brokers are
 * checked once, with a bounded timeout, so an unreachable Kafka is one clear error within seconds; the
 * catalog topics in `needs` must exist, so a wrong prefix names the missing topic instead of the broker's
 * "does not host this topic-partition".
 */
export async function processorContext(needs: readonly TopicKey[] = [], env: NodeJS.ProcessEnv = process.env): Promise<ProcessorContext> {
  const names = topicNamesFromEnv(env);
  await checkBrokers();
  const kafka = createKafka();
  if (needs.length > 0) {
    const admin = kafka.admin();
    await admin.connect();
    try {
      await requireTopics(admin, needs.map((key) => names.name(key)), `create them with \`trialrun topics create\` (TRIALRUN_TOPIC_PREFIX=${names.prefix})`);
    } finally {
      await admin.disconnect();
    }
  }
  return { kafka, serde: new TopicSerde(names), names };
}
