import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { tableForTopic, writeParquetFile, type SourceMeta } from '../../connectors/analytics/index.js';
import type { Consumer, Producer } from '../../connectors/kafka/index.js';
import { ShutdownError, type TopicKey } from '../../schemas/index.js';
import { toDeadLetter, type ProcessorContext, ProcessorMetrics, type RawRecord } from '../runtime/index.js';

export interface AnalyticsSinkOptions {
  /** Root of the Parquet folders, one sub-folder per table. */
  dataDir: string;
  /** Records per Parquet file at most. @default 1000 */
  maxRecordsPerFile?: number;
  /** @default ['trajectories', 'verifications', 'rewards', 'policyCheckpoints'] */
  topics?: TopicKey[];
}

const FILE = /^p(\d+)-(\d+)-(\d+)\.parquet$/;

/** The highest offset already written per `<topic>/<partition>`, read back from the file names. */
function writtenOffsets(dataDir: string, table: string): Map<number, bigint> {
  const done = new Map<number, bigint>();
  const root = join(dataDir, table);
  if (!existsSync(root)) return done;
  for (const run of readdirSync(root)) {
    const dir = join(root, run);
    for (const file of existsSync(dir) ? readdirSync(dir) : []) {
      const match = FILE.exec(file);
      if (!match) continue;
      const partition = Number(match[1]);
      const last = BigInt(match[3]!);
      if (last > (done.get(partition) ?? -1n)) done.set(partition, last);
    }
  }
  return done;
}

/**
 * Lands trajectories, verifications, rewards and checkpoints as Parquet (built as Arrow record batches).
 * Each file is named by its topic partition and offset range and written before the offsets are
 * committed; on restart, offsets already in a file name are skipped. So a crash at any point writes no row
 * twice and skips none. Records that fail their contract become dead letters.
 */
export class AnalyticsSink {
  readonly metrics = new ProcessorMetrics();
  /** Rows landed per table since start. */
  readonly rowsWritten = new Map<string, number>();
  private consumer: Consumer | undefined;
  private producer: Producer | undefined;
  private readonly maxRecordsPerFile: number;
  private readonly topics: TopicKey[];

  constructor(
    private readonly context: ProcessorContext,
    private readonly options: AnalyticsSinkOptions,
  ) {
    this.maxRecordsPerFile = options.maxRecordsPerFile ?? 1000;
    this.topics = options.topics ?? ['trajectories', 'verifications', 'rewards', 'policyCheckpoints'];
    for (const topic of this.topics) if (!tableForTopic(topic)) throw new Error(`AnalyticsSinkOptions.topics: no analytics table is fed by ${topic}`);
  }

  async start(): Promise<void> {
    const { kafka, names, serde } = this.context;
    const byTopic = new Map(this.topics.map((key) => [names.name(key), key]));
    const written = new Map(this.topics.map((key) => [names.name(key), writtenOffsets(this.options.dataDir, tableForTopic(key)!.table)]));
    this.producer = kafka.producer({ idempotent: true });
    await this.producer.connect();
    this.consumer = kafka.consumer({ groupId: `${names.prefix}analytics-sink`, readUncommitted: false, allowAutoTopicCreation: false });
    await this.consumer.connect();
    await this.consumer.subscribe({ topics: [...byTopic.keys()], fromBeginning: true });
    await this.consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
        const topicKey = byTopic.get(batch.topic)!;
        const spec = tableForTopic(topicKey)!;
        const done = written.get(batch.topic)!.get(batch.partition) ?? -1n;
        const fresh = batch.messages.filter((m) => BigInt(m.offset) > done);
        for (let i = 0; i < fresh.length; i += this.maxRecordsPerFile) {
          if (!isRunning() || isStale()) return;
          const chunk = fresh.slice(i, i + this.maxRecordsPerFile);
          const rows: Array<{ record: { lineage: { runId: string } }; meta: SourceMeta }> = [];
          const letters: Array<{ key: string; value: Buffer }> = [];
          for (const message of chunk) {
            try {
              const record = (await serde.decode(topicKey, message.value)) as { lineage: { runId: string } };
              rows.push({ record, meta: { partition: batch.partition, offset: message.offset } });
            } catch (error) {
              if (error instanceof ShutdownError) throw error;
              const raw: RawRecord = { topic: batch.topic, topicKey, partition: batch.partition, offset: message.offset, key: message.key, value: message.value, headers: {}, timestamp: message.timestamp };
              letters.push({ key: batch.topic, value: await serde.encode('deadLetters', toDeadLetter('analytics-sink', raw, error)) });
            }
          }
          const first = chunk[0]!.offset;
          const last = chunk[chunk.length - 1]!.offset;
          const byRun = new Map<string, typeof rows>();
          for (const row of rows) byRun.set(row.record.lineage.runId, [...(byRun.get(row.record.lineage.runId) ?? []), row]);
          for (const [runId, runRows] of byRun) {
            const path = join(this.options.dataDir, spec.table, `run_id=${runId.replace(/[^\w.-]/g, '_')}`, `p${batch.partition}-${first}-${last}.parquet`);
            writeParquetFile(path, spec.columns as never, runRows);
          }
          this.rowsWritten.set(spec.table, (this.rowsWritten.get(spec.table) ?? 0) + rows.length);
          if (letters.length) await this.producer!.send({ topic: names.name('deadLetters'), messages: letters });
          resolveOffset(last);
          await this.consumer!.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: (BigInt(last) + 1n).toString() }]);
          for (const _ of chunk) this.metrics.record(0, 1);
          await heartbeat();
        }
        // Everything in this batch was already in files before a restart: move past it.
        if (fresh.length === 0 && batch.messages.length > 0) resolveOffset(batch.lastOffset());
      },
    });
  }

  async stop(): Promise<void> {
    await this.consumer?.disconnect();
    await this.producer?.disconnect();
  }
}
