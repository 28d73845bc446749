import { catalogTopics, ensureTopics } from '../../connectors/kafka/index.js';
import { ConfigError, TOPICS, type TopicKey } from '../../schemas/index.js';
import type { Command } from '../command.js';
import { processorContext, topicNamesFromEnv } from '../context.js';

export const topicsCommand: Command = {
  name: 'topics',
  summary:
    'The topic catalog.\n' +
    '  list    print every topic with its key, partitions, retention, producers and consumers\n' +
    '  create  create missing topics and register their schemas (BACKWARD compatibility)',
  usage: 'list|create',
  options: {},
  help: {},
  async run(_values, [action, ...extra]) {
    if (extra.length > 0) throw new ConfigError(`expected list or create alone, got "${[action, ...extra].join(' ')}"`);
    if (action === 'list') {
      const names = topicNamesFromEnv();
      for (const key of Object.keys(TOPICS) as TopicKey[]) {
        const t = TOPICS[key];
        process.stdout.write(
          `${names.name(key)}\n  key ${t.key} · ${t.partitions} partitions · ${Object.entries(t.config).map(([k, v]) => `${k}=${v}`).join(' ')}\n` +
            `  producers: ${t.producers.join(', ')} · consumers: ${t.consumers.join(', ')}\n  ${t.description}\n`,
        );
      }
      return 0;
    }
    if (action === 'create') {
      const context = await processorContext();
      const admin = context.kafka.admin();
      await admin.connect();
      const created = await ensureTopics(admin, catalogTopics(context.names)).finally(() => admin.disconnect());
      await context.serde.register();
      process.stdout.write(`created ${created.length ? created.join(', ') : 'nothing (all exist)'}; schemas registered\n`);
      return 0;
    }
    throw new ConfigError(`expected list or create, got "${action ?? ''}"`);
  },
};
