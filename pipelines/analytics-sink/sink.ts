import { bucketOf, dataFileMetadata, openLake, ParquetWriter, recordLinesOf, tableForTopic, type DataFile, type Lake, type TableSpec } from '../../connectors/analytics/index.js';
import type { S3StoreOptions } from '../../connectors/storage/index.js';
import { parseContract } from '../../connectors/registry/index.js';
import type { IncomingMessage, KafkaAdmin, KafkaConsumer, KafkaProducer } from '../../connectors/kafka/index.js';
import { ConfigError, errorMessage, isRetriable, ShutdownError, wholeNumber, type DeadLetter, type Lineage, type TopicKey } from '../../schemas/index.js';
import {
  compose,
  rejoinAfterCrash,
  deadLetter,
  metrics,
  partitionKey,
  ProcessorMetrics,
  retry,
  TransactionalProducer,
  type EncodedOutput,
  type ProcessorContext,
  type RawHandler,
  resolveMembership,
  type MembershipOptions,
  type RawRecord,
  type ResolvedMembership,
  type RetryOptions,
} from '../runtime/index.js';
import { PartitionBuffer, type FlushBatch } from './buffer.js';

const MiB = 1024 * 1024;
const DEFAULT_TOPICS: readonly TopicKey[] = ['tasks', 'trajectories', 'verifications', 'rewards', 'policyCheckpoints'];

export interface AnalyticsSinkOptions extends MembershipOptions {
  /**
   * The lake: a folder (one sub-folder per table), or `s3://bucket/prefix`, where each file is written locally and
   * then created once under its key through the storage port (see Lake).
   */
  dataDir: string;
  /** How to reach S3 when dataDir is an s3:// URL. @default resolveS3StoreOptions(): TRIALRUN_S3_URL and the AWS_* variables */
  s3?: S3StoreOptions;
  /** @default every topic that feeds an analytics table: tasks, trajectories, verifications, rewards, policyCheckpoints */
  topics?: readonly TopicKey[];
  /** A topic partition's buffered records become files once their encoded size reaches this many bytes. @default 33554432 (32 MiB) */
  rollBytes?: number;
  /** ...or once its oldest buffered record has waited this long. @default 5000 */
  rollAgeMs?: number;
  /** Bound on all buffers together; past it the largest buffer is written early. @default 134217728 (128 MiB) */
  maxBufferedBytes?: number;
  /** DuckDB threads writing Parquet in the background, beside the consumer's own thread. @default 1 */
  writerThreads?: number;
  /** Retries of retriable decode failures (registry unreachable). @default the runtime's { retries: 3, initialDelayMs: 200, maxDelayMs: 5000, factor: 2 } */
  retry?: RetryOptions;
  /** Called for every dead letter. @default logs one line to stderr */
  onDeadLetter?: (letter: DeadLetter) => void;
}

interface ResolvedSinkOptions extends ResolvedMembership {
  readonly dataDir: string;
  readonly s3: S3StoreOptions;
  readonly topics: readonly TopicKey[];
  readonly rollBytes: number;
  readonly rollAgeMs: number;
  readonly maxBufferedBytes: number;
  readonly writerThreads: number;
  readonly retry: RetryOptions;
  readonly onDeadLetter: (letter: DeadLetter) => void;
}

function resolveSinkOptions(options: AnalyticsSinkOptions): ResolvedSinkOptions {
  if (!options.dataDir) throw new ConfigError('AnalyticsSinkOptions.dataDir is required');
  const resolved: ResolvedSinkOptions = {
    dataDir: options.dataDir,
    s3: options.s3 ?? {},
    topics: options.topics ?? DEFAULT_TOPICS,
    rollBytes: options.rollBytes ?? 32 * MiB,
    rollAgeMs: options.rollAgeMs ?? 5000,
    maxBufferedBytes: options.maxBufferedBytes ?? 128 * MiB,
    writerThreads: options.writerThreads ?? 1,
    ...resolveMembership(options, 'AnalyticsSinkOptions.sessionTimeoutMs'),
    retry: options.retry ?? {},
    onDeadLetter:
      options.onDeadLetter ??
      ((letter) => process.stderr.write(`[analytics-sink] dead-lettered ${letter.sourceTopic}[${letter.partition}]@${letter.offset}: ${letter.error.name}: ${letter.error.message}\n`)),
  };
  if (resolved.topics.length === 0) throw new ConfigError('AnalyticsSinkOptions.topics: at least one topic is required');
  for (const topic of resolved.topics) if (!tableForTopic(topic)) throw new ConfigError(`AnalyticsSinkOptions.topics: no analytics table is fed by ${topic}`);
  for (const name of ['rollBytes', 'rollAgeMs', 'maxBufferedBytes', 'writerThreads'] as const) wholeNumber(`AnalyticsSinkOptions.${name}`, resolved[name], { min: 1 });
  if (resolved.maxBufferedBytes < resolved.rollBytes) {
    throw new ConfigError(`AnalyticsSinkOptions.maxBufferedBytes (${resolved.maxBufferedBytes}) must be at least rollBytes (${resolved.rollBytes})`);
  }
  return resolved;
}

/**
 * Where the sink's time goes, in milliseconds since start: what `npm run bench:analytics` prints per
 * record. `decode` and `waiting` lie on the consumer's path, and the rest of its wall time is the
 * consumer's own (fetching and framing records); `write` and `commit` run behind it, while it reads on.
 */
export interface SinkStageTimes {
  /** Decoding and checking records against their contracts, and staging and buffering their lines. */
  decode: number;
  /** Turning buffered rows into Parquet files (written by DuckDB, fsynced, renamed). */
  write: number;
  /** The Kafka transaction of a flush (dead letters and offsets) and its ledger entry. */
  commit: number;
  /** The consumer waiting for the batch before to land before it hands over the next (write and commit run in the background). */
  waiting: number;
}

/**
 * Lands tasks, trajectories, verifications, rewards and checkpoints as Parquet. Each record is checked
 * against its contract once, at decode, by the contract's JSON Schema (TopicSerde.check), and its own JSON
 * bytes are kept as its line (RecordLines): no record is rebuilt or printed again in JavaScript, and
 * DuckDB makes the rows from the lines natively. The lines are buffered per topic partition, and when a buffer is big or old enough a flush hands it to DuckDB (the
 * store's one ParquetWriter, which compaction uses too) in the background, one file per (table, run,
 * hour) named by the topic partition and offset range it covers.
 *
 * Exactly once, across crashes at any point: a flush writes its files (each atomically), then commits the
 * dead letters of the range with the consumed offset in one Kafka transaction, then records the range in
 * a ledger beside the data. When it gets a partition, the sink takes as landed the later of the ledger
 * and the committed offset, deletes any file that starts past it (the orphans of a flush that never
 * committed) and skips records up to it. The ledger keeps that true even after Kafka forgets the group's
 * offsets. A flush that fails while landing is undone the same way for its partition, and the consumer
 * seeks back to read its records again. One sink (one consumer group) per data folder.
 */
export class AnalyticsSink {
  // One sink per process lands every table; it shows in /metrics beside the stream processors.
  readonly metrics = new ProcessorMetrics({ processor: 'analytics-sink', instance: '0' });
  /** Rows landed per table since start. */
  readonly rowsWritten = new Map<string, number>();
  /** Rows landed since start per table and run (lineage.runId), keyed `table/runId`. */
  private readonly rowsWrittenByRun = new Map<string, number>();
  filesWritten = 0;
  bytesWritten = 0;
  /** Flushes that failed (files not written or not committed); their records were read again. */
  landingFailures = 0;
  readonly stageMs: SinkStageTimes = { decode: 0, write: 0, commit: 0, waiting: 0 };
  private readonly options: ResolvedSinkOptions;
  private readonly chain: RawHandler;
  private readonly shutdown = new AbortController();
  private readonly buffers = new Map<string, PartitionBuffer>();
  /** Per topic partition: the last offset known landed, set when the partition is (re)assigned. */
  private readonly landed = new Map<string, bigint>();
  /** Partitions whose last flush failed after writing some files: sweep them before the next flush. */
  private readonly dirty = new Set<string>();
  /** Partitions whose failed flush could not yet be rewound (the lake did not answer): see rewind. */
  private readonly rewinding = new Map<string, { readonly topic: string; readonly partition: number }>();
  private readonly topicKeys = new Map<string, TopicKey>();
  private lock: Promise<unknown> = Promise.resolve();
  /** The batch landing in the background (see flush); settled, never rejected: a failure is kept in failedLanding. */
  private landing: Promise<void> = Promise.resolve();
  private failedLanding: { batch: FlushBatch; error: unknown } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private consumer: KafkaConsumer | undefined;
  /** Set while the sink joins its group again after its consumer stopped (see rejoinAfterCrash). */
  private rejoining: Promise<void> | null = null;
  private producer: TransactionalProducer | undefined;
  private admin: KafkaAdmin | undefined;
  private writer: ParquetWriter | undefined;
  private readonly lake: Lake;

  constructor(
    private readonly context: ProcessorContext,
    options: AnalyticsSinkOptions,
  ) {
    this.options = resolveSinkOptions(options);
    this.lake = openLake(this.options.dataDir, 'AnalyticsSinkOptions.dataDir', this.options.s3);
    const { serde, names } = context;
    for (const key of this.options.topics) this.topicKeys.set(names.name(key), key);
    this.chain = compose(
      async ({ record }) => {
        const { input, json } = await serde.check(record.topicKey, record.value);
        const { runId, createdAt } = (input as { lineage: Lineage }).lineage;
        const line = recordLinesOf(this.tableOf(record.topic)).line(input, json, { topic: record.topic, partition: record.partition, offset: record.offset }, (checked) => parseContract(record.topicKey, checked));
        this.bufferFor(record.topic, record.partition).addRow(bucketOf(runId, createdAt), runId, line);
        return [];
      },
      metrics(this.metrics),
      deadLetter('analytics-sink', serde, names, this.options.onDeadLetter),
      retry(this.options.retry),
    );
  }

  get groupId(): string {
    return `${this.context.names.prefix}analytics-sink`;
  }

  /** Records read but not yet in files. */
  get bufferedRecords(): number {
    let count = 0;
    for (const buffer of this.buffers.values()) if (!buffer.empty) count += Number(buffer.last - buffer.first!) + 1;
    return count;
  }

  /** Rows of one run (lineage.runId) landed in a table since start. */
  rowsLanded(table: string, runId: string): number {
    return this.rowsWrittenByRun.get(`${table}/${runId}`) ?? 0;
  }

  async start(): Promise<void> {
    const { kafka } = this.context;
    // A lake on S3 that cannot be written (no bucket, refused credentials, no server) is one line now, before
    // anything is consumed; once running, an unreachable server only delays landing (retriable, see land).
    await this.lake.check();
    this.writer = await ParquetWriter.open({ threads: this.options.writerThreads });
    const admin = kafka.admin();
    await admin.connect();
    this.admin = admin;
    this.producer = new TransactionalProducer(
      async () => {
        const producer = kafka.producer({ transactionalId: `${this.groupId}-0` });
        await producer.connect();
        return producer;
      },
      'analytics-sink',
      (groupId, topics) => admin.fetchGroupOffsets(groupId, topics),
    );
    await this.producer.connect();
    await this.startConsumer();
    const tick = Math.max(50, Math.min(1000, Math.floor(this.options.rollAgeMs / 4)));
    this.timer = setInterval(() => void this.flushDue().catch((error: unknown) => process.stderr.write(`[analytics-sink] age-based flush failed, retrying: ${errorMessage(error)}\n`)), tick);
  }

  /** Joins the group and starts reading; returns once running. */
  private async startConsumer(): Promise<void> {
    const consumer = this.context.kafka.consumer({
      groupId: this.groupId,
      fromBeginning: true,
      sessionTimeoutMs: this.options.sessionTimeoutMs,
      heartbeatIntervalMs: this.options.heartbeatIntervalMs,
      // A (re)join restarts every assigned partition from its committed offset: what was buffered is read again.
      onAssignment: () => void this.exclusive(async () => this.forgetAssignment()).catch((error: unknown) => process.stderr.write(`[analytics-sink] ${errorMessage(error)}\n`)),
    });
    this.consumer = consumer;
    await consumer.connect();
    await consumer.subscribe([...this.topicKeys.keys()]);
    let running = false;
    await consumer.run({
      // A failed start is thrown from here; a consumer that stops later would leave the group without a word.
      onCrash: (error) => {
        if (running && this.consumer === consumer) this.rejoinAfterCrash(error);
      },
      eachBatch: async ({ batch, resolveOffset, heartbeat, isActive }) => {
        const work = this.exclusive(async () => {
          if (this.shutdown.signal.aborted || !isActive()) return;
          if (this.rewinding.has(partitionKey(batch.topic, batch.partition))) {
            // Throws while the lake does not answer: the batch is handed over again, and nothing of it is read.
            await this.rewind(batch.topic, batch.partition);
            return;
          }
          const landed = await this.prepare(batch.topic, batch.partition);
          const buffer = this.bufferFor(batch.topic, batch.partition);
          for (const message of batch.messages) {
            if (this.shutdown.signal.aborted || !isActive()) return;
            const offset = BigInt(message.offset);
            if (offset > landed && offset > buffer.last) await this.consume(batch.topic, batch.partition, message, buffer);
            // Buffered records are not committed, only marked read; they are committed when their files are written.
            resolveOffset(message.offset);
            if (buffer.bytes >= this.options.rollBytes) await this.flush(buffer);
          }
          await this.enforceMemoryBound();
        });
        try {
          await work;
        } catch (error) {
          // Stopping interrupts a record mid-retry; it is read again after restart, not lost.
          if (error instanceof ShutdownError || this.shutdown.signal.aborted) return;
          // Said here, as the client only retries the batch: a lake that does not answer (S3 down) shows up.
          if (isRetriable(error)) process.stderr.write(`[analytics-sink] ${errorMessage(error)}; nothing committed, trying again\n`);
          throw error;
        }
        await heartbeat();
      },
    });
    running = true;
  }

  /**
   * The consumer stopped for good (the client gave up on an error it met): the sink is no member any more, and
   * what it buffered would never be committed. It drops its buffers and joins again (rejoinAfterCrash), until
   * stopped; the new assignment reads from the committed offsets.
   */
  private rejoinAfterCrash(cause: Error): void {
    if (this.rejoining || this.shutdown.signal.aborted) return;
    const leave = async (): Promise<void> => {
      const crashed = this.consumer;
      this.consumer = undefined;
      await crashed?.disconnect().catch(() => undefined);
      await this.exclusive(async () => this.forgetAssignment());
    };
    this.rejoining = rejoinAfterCrash('[analytics-sink]', cause, { leave, join: () => this.startConsumer() }, this.shutdown.signal).finally(() => (this.rejoining = null));
  }

  /** Graceful stop: everything read so far is written and committed first. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.shutdown.abort();
    await this.rejoining;
    try {
      await this.exclusive(async () => {
        for (const buffer of this.buffers.values()) if (!buffer.empty && this.landed.has(partitionKey(buffer.topic, buffer.partition))) await this.flush(buffer);
        await this.settleLanding();
      });
    } finally {
      await this.consumer?.disconnect();
      await this.producer?.disconnect();
      await this.admin?.disconnect();
      this.writer?.close();
      this.lake.close();
    }
  }

  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.lock.then(work, work);
    this.lock = run.catch(() => undefined);
    return run;
  }

  private bufferFor(topic: string, partition: number): PartitionBuffer {
    const key = partitionKey(topic, partition);
    let buffer = this.buffers.get(key);
    if (!buffer) {
      buffer = new PartitionBuffer(topic, partition);
      this.buffers.set(key, buffer);
    }
    return buffer;
  }

  /**
   * After a (re)join every partition restarts from its committed offset. The batch in flight lands (or
   * fails) first: settling a partition while its transaction may still commit would take the batch's
   * files for orphans.
   */
  private async forgetAssignment(): Promise<void> {
    await this.landing;
    // Its records are read again from the committed offset, like everything else buffered.
    this.failedLanding = undefined;
    for (const buffer of this.buffers.values()) buffer.clear();
    this.landed.clear();
    this.rewinding.clear();
  }

  private tableOf(topic: string): TableSpec<unknown> {
    const key = this.topicKeys.get(topic);
    if (key === undefined) throw new Error(`analytics-sink received a record from unexpected topic ${topic}`);
    return tableForTopic(key)!;
  }

  /**
   * First batch of a partition since (re)assignment: settle what is landed and delete the files of any
   * flush that never committed, so their rows are written exactly once, by the flush that reads them again.
   */
  private async prepare(topic: string, partition: number): Promise<bigint> {
    const key = partitionKey(topic, partition);
    const known = this.landed.get(key);
    if (known !== undefined) return known;
    const [committedGroup] = await this.admin!.fetchGroupOffsets(this.groupId, [topic]);
    const committed = BigInt(committedGroup?.partitions.find((p) => p.partition === partition)?.offset ?? '-1');
    const ledger = await this.lake.readLedger(topic, partition);
    const landed = committed > ledger + 1n ? committed - 1n : ledger;
    await this.removeFilesAfter(topic, partition, landed);
    this.landed.set(key, landed);
    return landed;
  }

  private async removeFilesAfter(topic: string, partition: number, landed: bigint): Promise<void> {
    const spec = this.tableOf(topic);
    for (const file of await this.lake.listDataFiles(spec.table)) {
      if (file.topic === topic && file.partition === partition && file.first > landed) await this.lake.remove(spec.table, file);
    }
  }

  private async consume(topic: string, partition: number, message: IncomingMessage, buffer: PartitionBuffer): Promise<void> {
    const offset = BigInt(message.offset);
    // A tombstone on a compacted topic deletes a key: nothing to land, and nothing wrong.
    let letters: readonly EncodedOutput[] = [];
    if (message.value !== null) {
      const raw: RawRecord = {
        topic,
        topicKey: this.topicKeys.get(topic)!,
        partition,
        offset: message.offset,
        key: message.key,
        value: message.value,
        headers: {},
        timestamp: message.timestamp,
      };
      const started = performance.now();
      letters = await this.chain({ record: raw, signal: this.shutdown.signal });
      this.stageMs.decode += performance.now() - started;
    }
    buffer.consumed(offset, message.value?.length ?? 0, letters, Date.now());
  }

  private async flushDue(): Promise<void> {
    await this.exclusive(async () => {
      if (this.shutdown.signal.aborted) return;
      const now = Date.now();
      // A partition whose rewind failed (the lake did not answer) is rewound when its next batch comes; at the end of a
      // run none may come, and its records, already handed over, would never land: the tick tries again too.
      for (const { topic, partition } of [...this.rewinding.values()]) await this.rewind(topic, partition).catch(() => undefined);
      for (const buffer of this.buffers.values()) if (buffer.due(now, this.options.rollBytes, this.options.rollAgeMs)) await this.flush(buffer);
    });
  }

  private async enforceMemoryBound(): Promise<void> {
    const all = [...this.buffers.values()];
    let total = all.reduce((sum, buffer) => sum + buffer.bytes, 0);
    for (const buffer of all.sort((a, b) => b.bytes - a.bytes)) {
      if (total <= this.options.maxBufferedBytes) return;
      total -= buffer.bytes;
      await this.flush(buffer);
    }
  }

  /**
   * Hands a partition's buffer to land in the background, so DuckDB writes its files while the consumer
   * reads on. At most one batch lands at a time (they share the one transactional producer): a flush
   * first waits for the one before it. Caller holds the lock.
   */
  private async flush(buffer: PartitionBuffer): Promise<void> {
    if (buffer.empty) return;
    await this.settleLanding();
    if (buffer.empty) return; // the landing that failed was this partition's: the buffer was rewound
    const batch = buffer.detach();
    this.landing = this.land(batch).catch((error: unknown) => void (this.failedLanding = { batch, error }));
  }

  /**
   * Waits for the batch in flight. If it failed, its records are only on Kafka now: the partition is
   * rewound as after a restart (what landed is settled again, orphan files go, the consumer seeks back)
   * and the failure is thrown. Caller holds the lock.
   */
  private async settleLanding(): Promise<void> {
    const started = performance.now();
    await this.landing;
    this.stageMs.waiting += performance.now() - started;
    const failed = this.failedLanding;
    if (!failed) return;
    this.failedLanding = undefined;
    const { topic, partition } = failed.batch;
    this.bufferFor(topic, partition).clear();
    this.landed.delete(partitionKey(topic, partition));
    this.rewinding.set(partitionKey(topic, partition), { topic, partition });
    // If the lake cannot be asked now (S3 unreachable), the partition stays marked: its next batch rewinds it first.
    await this.rewind(topic, partition).catch(() => undefined);
    throw failed.error;
  }

  /**
   * Seeks a partition back to just after what is landed (settling orphans first, see prepare). Until that is done,
   * the records the consumer hands over for it are not read: they would follow a gap where the failed batch was.
   */
  private async rewind(topic: string, partition: number): Promise<void> {
    if (!this.consumer || this.shutdown.signal.aborted) return;
    const landed = await this.prepare(topic, partition);
    // The batch being handled for this partition, if any, is stale from now on (isStale) and is not read on.
    this.consumer.seek(topic, partition, (landed + 1n).toString());
    this.rewinding.delete(partitionKey(topic, partition));
  }

  /** Files, then the dead letters and the offset in one transaction, then the ledger. */
  private async land(batch: FlushBatch): Promise<void> {
    const { topic, partition } = batch;
    const key = partitionKey(topic, partition);
    const spec = this.tableOf(topic);
    const range = { topic, partition, first: batch.first, last: batch.last };
    const metadata = dataFileMetadata(spec.table, range);
    const written: DataFile[] = [];
    let commitStarted = 0;
    try {
      if (this.dirty.has(key)) {
        await this.removeFilesAfter(topic, partition, range.first - 1n);
        this.dirty.delete(key);
      }
      const writeStarted = performance.now();
      for (const [folder, { pieces }] of batch.buckets) {
        const file = await this.lake.writeDataFile(spec.table, folder, range, (path) => this.writer!.writeLines(path, spec, pieces, metadata));
        written.push({ ...range, ...file, bucket: folder });
      }
      this.stageMs.write += performance.now() - writeStarted;
      commitStarted = performance.now();
      await this.producer!.commit(batch.deadLetters, this.consumer!, [{ topic, partition, offset: (range.last + 1n).toString() }]);
    } catch (error) {
      // Not committed: these files must not survive next to the ones a later flush of the same records writes. One
      // that cannot be removed now (S3 unreachable) is swept before this partition's next flush (dirty).
      for (const file of written) await this.lake.remove(spec.table, file).catch(() => undefined);
      this.dirty.add(key);
      this.landingFailures++;
      throw error;
    }
    await this.lake.writeLedger(topic, partition, range.last);
    this.stageMs.commit += performance.now() - commitStarted;
    this.landed.set(key, range.last);
    this.rowsWritten.set(spec.table, (this.rowsWritten.get(spec.table) ?? 0) + batch.rows);
    // A bucket is one run's (and hour's) rows.
    for (const { runId, rows } of batch.buckets.values()) {
      const key = `${spec.table}/${runId}`;
      this.rowsWrittenByRun.set(key, (this.rowsWrittenByRun.get(key) ?? 0) + rows);
    }
    this.filesWritten += written.length;
    this.bytesWritten += written.reduce((sum, file) => sum + file.bytes, 0);
  }
}
