import { join } from 'node:path';
import { openCheckpointStore } from '../../connectors/checkpoints/index.js';
import { parsePosition, readTopic, type Position } from '../../connectors/kafka/index.js';
import { createLearner } from '../../pipelines/learner/index.js';
import { replayIntoProcessor, replayIntoTopic, type ReplayTarget } from '../../pipelines/replay/index.js';
import { createRewardProcessor } from '../../pipelines/reward/index.js';
import type { ProcessorContext } from '../../pipelines/runtime/index.js';
import { TOPICS, type TopicKey, type TopicNames } from '../../schemas/index.js';
import { stackPaths } from '../../stack/index.js';
import { intOption, type Command } from '../command.js';
import { processorContext } from '../context.js';
import { endProgress, printProgress, progressLine } from '../progress.js';

interface ReplayableProcessor {
  readonly inputs: readonly TopicKey[];
  readonly outputs: readonly TopicKey[];
  create(context: ProcessorContext, values: Record<string, string | boolean | undefined>, runId: string): ReplayTarget;
}

/** Processors a range can be replayed into, with what they read and write. */
const PROCESSORS: Readonly<Record<string, ReplayableProcessor>> = {
  learner: {
    inputs: ['trajectories', 'rewards'],
    outputs: ['policyCheckpoints'],
    // Its artifacts go to a folder of the replay's own, never among the live policy's versions.
    create: (context, values, runId) =>
      createLearner(context, {
        runId,
        batchSize: intOption(values, 'batch-size'),
        store: openCheckpointStore(join(process.env.TRIALRUN_CHECKPOINTS ?? join(stackPaths().stateDir, 'checkpoints'), 'replays', context.names.prefix.replace(/\.$/, ''))),
      }),
  },
  reward: {
    inputs: ['verifications'],
    outputs: ['rewards'],
    create: (context) => createRewardProcessor(context),
  },
};

/** A catalog topic by key (`policyCheckpoints`) or name (`policy-checkpoints`), else a physical topic name as given. */
function resolveTopic(names: TopicNames, text: string): { physical: string; key: TopicKey | undefined } {
  const key = (Object.keys(TOPICS) as TopicKey[]).find((k) => k === text || TOPICS[k].name === text);
  return key ? { physical: names.name(key), key } : { physical: text, key: undefined };
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
    into: `a processor (${Object.keys(PROCESSORS).join(', ')}) or a target topic (catalog or physical name)`,
    'batch-size': 'learner: samples per update (default: the learner\'s)',
    'run-id': 'run id stamped on what the replayed processor writes (default: replay-<prefix>)',
  },
  async run(values) {
    const topics = (values.topic as unknown as string[] | undefined) ?? [];
    const into = values.into as string | undefined;
    if (!values.from || !into) {
      process.stderr.write('trialrun replay: --from and --into are required\n');
      return 2;
    }
    let from: Position;
    let to: Position;
    try {
      from = parsePosition(String(values.from));
      to = parsePosition(String(values.to));
    } catch (error) {
      process.stderr.write(`trialrun replay: ${error instanceof Error ? error.message : String(error)}\n`);
      return 2;
    }
    const context = processorContext();
    const started = performance.now();
    const show = (label: string, done: number, total: number): void => printProgress(progressLine(label, done, total, performance.now() - started));

    const processor = PROCESSORS[into];
    if (processor) {
      const given = topics.map((text) => resolveTopic(context.names, text).key);
      const unknown = topics.filter((_, i) => !given[i] || !processor.inputs.includes(given[i]!));
      if (unknown.length) {
        process.stderr.write(`trialrun replay: ${into} reads ${processor.inputs.join(' and ')}; it cannot replay ${unknown.join(', ')}\n`);
        return 2;
      }
      let runId = values['run-id'] as string | undefined;
      const report = await replayIntoProcessor(context, {
        processor: into,
        inputs: processor.inputs,
        from,
        to,
        create: (replayContext) => processor.create(replayContext, values, (runId ??= `replay-${replayContext.names.prefix.replace(/\.$/, '')}`)),
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

    if (topics.length !== 1) {
      process.stderr.write(`trialrun replay: into a topic, give exactly one --topic (got ${topics.length})\n`);
      return 2;
    }
    const source = resolveTopic(context.names, topics[0]!).physical;
    const target = resolveTopic(context.names, into).physical;
    const report = await replayIntoTopic(context.kafka, { source, target, from, to, onProgress: (done, total) => show(`[replay] ${source} -> ${target}`, done, total) });
    endProgress();
    process.stdout.write(`copied ${report.copied} records ${source} -> ${target}${report.copied === 0 && report.total > 0 ? ' (this range was already copied)' : ''}; group ${report.groupId}\n`);
    return 0;
  },
};
