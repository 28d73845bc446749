import { join } from 'node:path';
import { openCheckpointStore } from '../../connectors/checkpoints/index.js';
import { checkRange, readTopic, type Position } from '../../connectors/kafka/index.js';
import { createLearner } from '../../pipelines/learner/index.js';
import { replayIntoProcessor, replayIntoTopic, type ReplayTarget } from '../../pipelines/jobs/replay/index.js';
import { createRewardProcessor } from '../../pipelines/reward/index.js';
import type { ProcessorContext } from '../../pipelines/runtime/index.js';
import { ConfigError, TOPICS, type TopicKey, type TopicNames } from '../../schemas/index.js';
import type { Command } from '../command.js';
import { processorContext, topicNamesFromEnv } from '../context.js';
import { intOption, listOption, positionOption, stringOption, type OptionValues } from '../options.js';
import { checkpointsLocation } from '../paths.js';
import { endProgress, printProgress, progressLine } from '../progress.js';

interface ReplayableProcessor {
  readonly inputs: readonly TopicKey[];
  readonly outputs: readonly TopicKey[];
  create(context: ProcessorContext, settings: ReplaySettings, runId: string): ReplayTarget;
}

/** Processors a range can be replayed into, with what they read and write. */
const PROCESSORS: Readonly<Record<string, ReplayableProcessor>> = {
  learner: {
    inputs: ['trajectories', 'rewards'],
    outputs: ['policyCheckpoints'],
    // Its artifacts go to a folder of the replay's own, never among the live policy's versions.
    create: (context, settings, runId) =>
      createLearner(context, {
        runId,
        batchSize: settings.batchSize,
        store: openCheckpointStore(join(checkpointsLocation(), 'replays', context.names.prefix.replace(/\.$/, ''))),
      }),
  },
  reward: {
    inputs: ['verifications'],
    outputs: ['rewards'],
    create: (context) => createRewardProcessor(context),
  },
};

/** The replayable processor of that name; own keys only, so `--into constructor` is a topic name, not Object's. */
const processorNamed = (name: string): ReplayableProcessor | undefined => (Object.hasOwn(PROCESSORS, name) ? PROCESSORS[name] : undefined);

/** A catalog topic by key (`policyCheckpoints`) or name (`policy-checkpoints`), under the prefix. */
const catalogKey = (text: string): TopicKey | undefined => (Object.keys(TOPICS) as TopicKey[]).find((k) => k === text || TOPICS[k].name === text);

/** What Kafka allows in a topic name. */
const TOPIC_NAME = /^[A-Za-z0-9._-]{1,249}$/;

/**
 * A replay's target topic, always under TRIALRUN_TOPIC_PREFIX (`--into rewards-backfill` is
 * `trialrun.rewards-backfill`), so a replay never writes into another experiment's topics; a live catalog
 * topic is refused, since copies there would be consumed again as new records.
 */
export function targetTopic(names: TopicNames, text: string): string {
  const bare = text.startsWith(names.prefix) ? text.slice(names.prefix.length) : text;
  const key = catalogKey(bare);
  if (key) throw new ConfigError(`--into ${text} is the live topic ${names.name(key)}, whose processors would take the copies as new records; give a new name, such as ${TOPICS[key].name}-backfill`);
  const physical = `${names.prefix}${bare}`;
  if (!TOPIC_NAME.test(physical)) throw new ConfigError(`--into ${text}: "${physical}" is not a valid topic name (letters, digits, '.', '_' and '-', 249 at most)`);
  return physical;
}

/** A source topic: a catalog topic under the prefix, else a physical name (taken under the prefix when that is what exists). */
function sourceTopic(names: TopicNames, text: string, existing: ReadonlySet<string>): string {
  const key = catalogKey(text);
  if (key) return names.name(key);
  if (!existing.has(text) && existing.has(`${names.prefix}${text}`)) return `${names.prefix}${text}`;
  return text;
}

/** Everything `replay` needs from its command line, checked before it connects or creates anything. */
export interface ReplaySettings {
  readonly topics: readonly string[];
  readonly from: Position;
  readonly to: Position;
  readonly into: string;
  /** The learner's samples per update. @default the learner's own */
  readonly batchSize: number | undefined;
  /** @default replay-<prefix> */
  readonly runId: string | undefined;
}

export function resolveReplaySettings(values: OptionValues, names: TopicNames, now: number = Date.now()): ReplaySettings {
  const into = stringOption(values, 'into');
  if (values.from === undefined || !into) throw new ConfigError('--from and --into are required (see trialrun replay --help)');
  const from = positionOption(values, 'from');
  const to = positionOption(values, 'to', 'latest');
  checkRange(from, to, now);
  const topics = listOption(values, 'topic') ?? [];
  const processor = processorNamed(into);
  if (processor) {
    const unknown = topics.filter((text) => !processor.inputs.includes(catalogKey(text)!));
    if (unknown.length) throw new ConfigError(`${into} reads ${processor.inputs.map((key) => TOPICS[key].name).join(' and ')}; it cannot replay ${unknown.join(', ')}`);
  } else {
    if (topics.length !== 1) throw new ConfigError(`into a topic, give exactly one --topic (got ${topics.length}); or --into one of the processors ${Object.keys(PROCESSORS).join(', ')}`);
    targetTopic(names, into);
  }
  return { topics, from, to, into, batchSize: intOption(values, 'batch-size'), runId: stringOption(values, 'run-id') };
}

async function countRecords(context: ProcessorContext, topic: string): Promise<number> {
  let count = 0;
  await readTopic(context.kafka, { topic, onRecord: () => void count++ });
  return count;
}

export const replayCommand: Command = {
  name: 'replay',
  summary:
    'Re-consume a time or offset range of a topic with its own consumer group (live groups are never disturbed), into a topic or a processor.\n' +
    `Into a topic: the range is copied transactionally, keyed and partitioned as the source. Into a processor (${Object.keys(PROCESSORS).join(', ')}): its inputs\n` +
    'are copied under a replay prefix and a fresh instance with its own state consumes them, writing its outputs under that prefix\n' +
    '(e.g. a learner retrained from stored rewards publishes its own checkpoints, not over the live policy). Re-running the same replay does nothing twice.\n' +
    'Example: trialrun replay --topic rewards --from 2025-06-01T00:00:00Z --to 2025-06-02T00:00:00Z --into learner',
  usage: '',
  options: {
    topic: { type: 'string', multiple: true },
    from: { type: 'string' },
    to: { type: 'string', default: 'latest' },
    into: { type: 'string' },
    'batch-size': { type: 'string' },
    'run-id': { type: 'string' },
  },
  help: {
    topic: 'topic to re-read: a catalog name (rewards, policy-checkpoints, ...) or a physical name; a processor replay copies every input it needs',
    from: 'inclusive start on every partition: earliest, an offset, @<epoch ms>, or an ISO time',
    to: 'exclusive end, same forms',
    into: `a processor (${Object.keys(PROCESSORS).join(', ')}) or a new topic, always under TRIALRUN_TOPIC_PREFIX (live catalog topics are refused)`,
    'batch-size': 'learner: samples per update (default: the learner\'s)',
    'run-id': 'run id stamped on what the replayed processor writes (default: replay-<prefix>)',
  },
  async run(values) {
    const settings = resolveReplaySettings(values, topicNamesFromEnv());
    const { from, to, into } = settings;
    const context = await processorContext();
    const started = performance.now();
    const show = (label: string, done: number, total: number): void => printProgress(progressLine(label, done, total, performance.now() - started));

    const processor = processorNamed(into);
    if (processor) {
      let runId = settings.runId;
      const report = await replayIntoProcessor(context, {
        processor: into,
        inputs: processor.inputs,
        from,
        to,
        create: (replayContext) => processor.create(replayContext, settings, (runId ??= `replay-${replayContext.names.prefix.replace(/\.$/, '')}`)),
        onProgress: (p) => show(`[replay ${p.stage}] ${p.topic}`, p.done, p.total),
      });
      endProgress();
      const replayNames = { name: (key: TopicKey) => `${report.prefix}${TOPICS[key].name}` };
      process.stdout.write(
        [
          `replayed ${into} over ${processor.inputs.join(' + ')} in ${(report.elapsedMs / 1000).toFixed(1)}s; namespace ${report.prefix}`,
          ...report.copies.map((c) => `  copied ${c.copied} records ${c.source} -> ${c.target}${c.copied === 0 ? ' (already copied)' : ''}`),
          `  processed ${report.processed} input offsets${report.processed === 0 ? ' (already processed)' : ''}`,
          ...(await Promise.all(processor.outputs.map(async (key) => `  ${replayNames.name(key)}: ${await countRecords(context, replayNames.name(key))} records`))),
          `Land it in Parquet with: TRIALRUN_TOPIC_PREFIX=${report.prefix} trialrun run analytics-sink`,
        ].join('\n') + '\n',
      );
      return 0;
    }

    const admin = context.kafka.admin();
    await admin.connect();
    const existing = new Set(await admin.listTopics().finally(() => admin.disconnect()));
    const source = sourceTopic(context.names, settings.topics[0]!, existing);
    const target = targetTopic(context.names, into);
    const report = await replayIntoTopic(context.kafka, { source, target, from, to, onProgress: (done, total) => show(`[replay] ${source} -> ${target}`, done, total) });
    endProgress();
    process.stdout.write(`copied ${report.copied} records ${source} -> ${target}${report.copied === 0 && report.total > 0 ? ' (this range was already copied)' : ''}; group ${report.groupId}\n`);
    return 0;
  },
};
