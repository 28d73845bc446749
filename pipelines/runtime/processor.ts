import type { BatchPayload, IncomingMessage, KafkaAdmin, KafkaConsumer, KafkaPort, KafkaProducer } from '../../connectors/kafka/index.js';
import { catalogTopics, ensureTopics } from '../../connectors/kafka/index.js';
import type { TopicSerde } from '../../connectors/registry/index.js';
import { ConfigError, ConnectionError, errorMessage, HostUnavailableError, RecordTooLargeError, resolveRetryOptions, requireOption, ShutdownError, wholeNumber, withRetries, type DeadLetter, type ResolvedRetryOptions, type RetryOptions, type TopicKey, type TopicNames, type TopicValue } from '../../schemas/index.js';
import { typed } from './codec.js';
import { deadLetter, encodeDeadLetter } from './dead-letter.js';
import { boundedOutputs, RecordLimits } from './record-limits.js';
import { hostGuard } from './host.js';
import { resolveMembership, type MembershipOptions, type ResolvedMembership } from './membership.js';
import { countRetries, metrics, ProcessorMetrics } from './metrics/index.js';
import { byPriority, decodeProgress, encodeHandled, freshestProgress, isHandled, MAX_REORDERED, nextToCommit, type PartitionProgress } from './priority.js';
import { ProcessorLease } from './lease.js';
import { rejoinAfterCrash } from './rejoin.js';
import { retry } from './retry.js';
import type { StateStore } from './state-store.js';
import { timeout } from './timeout.js';
import { TransactionalProducer } from './transaction.js';
import { compose, partitionKey, type Accept, type EncodedOutput, type Handler, type Output, type RawHandler, type RawRecord, type TypedRecord } from './types.js';

/** The connections a processor runs on; one per process, shared by its processors. */
export interface ProcessorContext {
  readonly kafka: KafkaPort;
  readonly serde: TopicSerde;
  readonly names: TopicNames;
}

export interface ProcessorOptions<K extends TopicKey> extends MembershipOptions {
  /** Names the consumer group (`<prefix><name>`) and the transactional id (`<prefix><name>-<instanceId>`). */
  name: string;
  inputs: readonly K[];
  /**
   * Names this instance's transactional id. With kafkajs it must stay the same across restarts (the restarted
   * instance fences its zombie by it) and a processor with stores runs as '0' only; with confluent any
   * number of instances run, stateful ones as one active and standbys. @default '0'
   */
  instanceId?: string;
  /** Records handled per Kafka transaction; 1 makes every slow record durable as soon as it is done. @default 20 */
  maxRecordsPerTransaction?: number;
  /** @default { retries: 3, initialDelayMs: 200, maxDelayMs: 5000, factor: 2 } */
  retry?: RetryOptions;
  /** Budget for one try of one record. @default 120000 */
  timeoutMs?: number;
  /** Stores restored before the first record and written in each transaction. @default [] */
  stores?: readonly StateStore<unknown>[];
  /** Where a group with no committed offset starts. @default true (the earliest record) */
  fromBeginning?: boolean;
  /** Called for every dead letter, e.g. to log it. @default logs one line to stderr */
  onDeadLetter?: (letter: DeadLetter) => void;
  /**
   * Handle each fetched batch highest priority first instead of in offset order (needs
   * maxRecordsPerTransaction 1). Still exactly once: each commit keeps the partition's offset at its lowest
   * unhandled record and marks the records handled above it in the offset metadata. @default offset order
   */
  priority?: (value: TopicValue<K>) => number;
  /**
   * Which records this processor is for. The others are committed past without reaching the handler and
   * counted in `metrics.skipped`; a loop run uses it to leave records of other runs on shared topics alone.
   * A record that cannot be decoded never gets here: it is dead-lettered as always. @default every record
   */
  accept?: Accept<K>;
  /**
   * Whether what the host needs answers (its sandbox engine: SandboxPool.reachable; its blob stores: `allAnswer` and
   * `storeAnswers`), asked after a failed try of a record. When it does not (S3 stopped, say), the record's transaction is aborted and this instance leaves its group, so the group's healthy members
   * take its partitions; it probes with `hostProbe` backoff and rejoins once the host answers. @default none: a
   * failure is always the record's (retried, then dead-lettered)
   */
  hostAvailable?: () => Promise<boolean>;
  /** Backoff of the probes while the host is down; once they are spent the instance rejoins anyway. @default { retries: 720, initialDelayMs: 1000, maxDelayMs: 5000 } (about an hour) */
  hostProbe?: RetryOptions;
  /**
   * How long one fetched batch is worked on before it is handed back (after the record or chunk in hand): its
   * unhandled records are fetched again. A consumer joins a rebalance, and so lets a new instance of its group
   * take partitions, only between batches, and the confluent client hands over a partition's whole backlog as
   * one batch: a rollout worker with a backlog of slow tasks kept its group's other instance without partitions
   * for a whole run. @default 10000
   */
  yieldBatchAfterMs?: number;
}

export interface ResolvedProcessorOptions<K extends TopicKey> extends Required<Omit<ProcessorOptions<K>, 'retry' | 'priority' | 'accept' | 'sessionTimeoutMs' | 'hostAvailable' | 'hostProbe'>>, ResolvedMembership {
  retry: RetryOptions;
  priority: ((value: TopicValue<K>) => number) | null;
  accept: Accept<K> | null;
  hostAvailable: (() => Promise<boolean>) | null;
  hostProbe: ResolvedRetryOptions;
}

export function resolveProcessorOptions<K extends TopicKey>(options: ProcessorOptions<K>): ResolvedProcessorOptions<K> {
  if (!/^[a-z][a-z0-9-]*$/.test(options.name)) throw new ConfigError(`ProcessorOptions.name "${options.name}" must be kebab-case`);
  if (options.inputs.length === 0) throw new ConfigError(`ProcessorOptions.inputs of ${options.name}: at least one input topic is required`);
  const resolved = {
    maxRecordsPerTransaction: 20,
    retry: {},
    timeoutMs: 120_000,
    stores: [],
    fromBeginning: true,
    priority: null,
    yieldBatchAfterMs: 10_000,
    onDeadLetter: (letter: DeadLetter) =>
      process.stderr.write(`[${letter.processor}] dead-lettered ${letter.sourceTopic}[${letter.partition}]@${letter.offset}: ${letter.error.name}: ${letter.error.message}\n`),
    ...options,
    // Factories pass their own optional settings straight through, undefined included.
    instanceId: options.instanceId ?? '0',
    accept: options.accept ?? null,
    hostAvailable: options.hostAvailable ?? null,
    hostProbe: resolveHostProbe(options),
    ...resolveMembership(options, `ProcessorOptions.sessionTimeoutMs of ${options.name}`),
  };
  wholeNumber(`ProcessorOptions.maxRecordsPerTransaction of ${options.name}`, resolved.maxRecordsPerTransaction, { min: 1 });
  // Infinity is allowed: a batch is never given up for time.
  requireOption(resolved.yieldBatchAfterMs >= 0, `ProcessorOptions.yieldBatchAfterMs of ${options.name}`, 'a number >= 0', resolved.yieldBatchAfterMs);
  if (resolved.priority !== null && resolved.maxRecordsPerTransaction !== 1) {
    throw new ConfigError(`ProcessorOptions of ${options.name}: priority order needs maxRecordsPerTransaction 1 (every record is its own transaction)`);
  }
  return resolved;
}

function resolveHostProbe(options: Pick<ProcessorOptions<TopicKey>, 'name' | 'hostProbe'>): ResolvedRetryOptions {
  try {
    return resolveRetryOptions({ retries: 720, initialDelayMs: 1000, maxDelayMs: 5000, ...options.hostProbe });
  } catch (error) {
    throw new ConfigError(`ProcessorOptions.hostProbe of ${options.name}: ${errorMessage(error)}`);
  }
}

/**
 * Consume -> handle -> produce, exactly once: the outputs of a chunk of records, the state-store changes
 * they caused, and the consumed offsets are committed in one Kafka transaction; consumers downstream read
 * committed records only. Each record passes through metrics -> dead-letter -> retry -> timeout -> codec
 * -> handler, so a poison record becomes a dead letter and processing goes on.
 */
export class StreamProcessor<K extends TopicKey> {
  readonly metrics: ProcessorMetrics;
  private readonly options: ResolvedProcessorOptions<K>;
  private readonly chain: RawHandler;
  /** The largest record each output topic takes, as the broker says. */
  private readonly limits: RecordLimits;
  /** Aborted when this instance stops processing: on stop(), or when a standby took its lease. */
  private activation = new AbortController();
  private stopped = false;
  /** Aborted by stop(): ends the probes of a host that is down, and the wait before a rejoin. */
  private readonly lifetime = new AbortController();
  /** Set while this instance is out of its group to join again: its host is down, or its consumer stopped. */
  private rejoining: Promise<void> | null = null;
  private lease: ProcessorLease | undefined;
  private readonly topicKeys: Map<string, K>;
  private consumer: KafkaConsumer | undefined;
  private producer: TransactionalProducer | undefined;
  /** Reads committed offsets and their metadata back (priority order, a commit of unknown outcome); connected on first use. */
  private admin: Promise<KafkaAdmin> | undefined;
  /**
   * What this instance itself last committed per input partition. The group's commit as read back can lag it (a
   * moved group coordinator that has not loaded it yet, a consumer restarted inside the client): such records are
   * not handled twice.
   */
  private readonly committedHere = new Map<string, PartitionProgress>();
  private assigned: ReadonlyArray<{ readonly topic: string; readonly partition: number }> = [];

  constructor(
    private readonly context: ProcessorContext,
    options: ProcessorOptions<K>,
    handler: Handler<TypedRecord<K>, Output>,
  ) {
    this.options = resolveProcessorOptions(options);
    this.metrics = new ProcessorMetrics({ processor: this.options.name, instance: this.options.instanceId });
    const { serde, names } = context;
    this.topicKeys = new Map(this.options.inputs.map((key) => [names.name(key), key]));
    this.limits = new RecordLimits(() => this.groupOffsets(), () => context.kafka.client);
    const { accept } = this.options;
    const accepted: Handler<TypedRecord<K>, Output> =
      accept === null
        ? handler
        : async (payload) => {
            if (accept(payload.record)) return handler(payload);
            this.metrics.skipped++;
            return [];
          };
    this.chain = compose(
      typed(serde, names, accepted),
      metrics(this.metrics),
      deadLetter(this.options.name, serde, names, (letter) => this.deadLettered(letter), this.limits),
      // Outside the retries: an output too large for its topic is refused the same way every time.
      boundedOutputs(this.options.name, this.limits),
      retry(this.options.retry),
      countRetries(this.metrics),
      ...(this.options.hostAvailable ? [hostGuard(this.options.name, this.options.hostAvailable)] : []),
      timeout(this.options.timeoutMs),
    );
  }

  get name(): string {
    return this.options.name;
  }

  /** Names this instance's transactional id among the group's members. */
  get instanceId(): string {
    return this.options.instanceId;
  }

  get groupId(): string {
    return `${this.context.names.prefix}${this.options.name}`;
  }

  /** The input partitions the group gave this instance at its last (re)join; none while it is not a member. */
  get assignment(): ReadonlyArray<{ readonly topic: string; readonly partition: number }> {
    return this.assigned;
  }

  get leaseTopic(): string {
    return `${this.groupId}.lease`;
  }

  /**
   * Restores the stores, joins the group and starts processing; returns once running. An instance of a
   * stateful processor first waits for its lease (see ProcessorLease): a standby returns once it took over.
   */
  async start(): Promise<void> {
    const { kafka } = this.context;
    const stateful = this.options.stores.length > 0;
    // kafkajs fences by transactional id alone: only one fixed instance may write whole stores.
    if (stateful && kafka.client !== 'confluent' && this.options.instanceId !== '0') {
      throw new ConfigError(`${this.options.name} has state stores: with the kafkajs client it runs as the single instance '0' (the confluent client fences by group generation and runs any number)`);
    }
    const admin = kafka.admin();
    await admin.connect();
    try {
      await ensureTopics(admin, [
        ...this.options.stores.map((store) => ({ topic: store.changelogTopic, partitions: 1, config: { 'cleanup.policy': 'compact' } })),
        ...(stateful ? [{ topic: this.leaseTopic, partitions: 1, config: {} }] : []),
      ]);
    } finally {
      await admin.disconnect();
    }
    if (stateful && kafka.client === 'confluent') {
      this.lease = new ProcessorLease(kafka, this.leaseTopic, this.leaseTopic, this.options, () => void this.standBy());
      await this.lease.join();
      await this.lease.acquired();
    }
    if (!this.stopped) await this.activate();
  }

  /** The lease moved to another instance: stop processing, drop the stores, and wait to get it back. */
  private async standBy(): Promise<void> {
    if (this.stopped) return;
    process.stderr.write(`[${this.options.name}] instance ${this.options.instanceId} lost its lease; standing by\n`);
    await this.deactivate();
    await this.lease!.acquired();
    if (!this.stopped) await this.activate();
  }

  private async activate(): Promise<void> {
    const { kafka, names } = this.context;
    this.activation = new AbortController();
    for (const store of this.options.stores) await store.restore(kafka);
    this.producer = new TransactionalProducer(() => this.newProducer(), `${this.options.name} instance ${this.options.instanceId}`, async (groupId, topics) =>
      (await this.groupOffsets()).fetchGroupOffsets(groupId, topics),
    );
    await this.producer.connect();
    this.consumer = kafka.consumer({
      groupId: this.groupId,
      fromBeginning: this.options.fromBeginning,
      sessionTimeoutMs: this.options.sessionTimeoutMs,
      heartbeatIntervalMs: this.options.heartbeatIntervalMs,
      // A chunk may take every try of every record in it; past that the member is stuck, and leaves.
      maxPollIntervalMs: this.maxChunkMs(),
      onAssignment: (assignment) => void (this.assigned = assignment),
    });
    await this.consumer.connect();
    await this.consumer.subscribe(this.options.inputs.map((key) => names.name(key)));
    let running = false;
    const activation = this.activation;
    await this.consumer.run({
      eachBatch: (payload) => (this.options.priority ? this.handleByPriority(payload, this.options.priority) : this.handleInOrder(payload)),
      // A failed start is thrown from here; a consumer that stops later would leave the group without a word.
      onCrash: (error) => {
        if (running && !activation.signal.aborted) this.rejoinAfterCrash(error);
      },
    });
    running = true;
  }

  /** The admin client, connected on first use. */
  private groupOffsets(): Promise<KafkaAdmin> {
    this.admin ??= (async () => {
      const admin = this.context.kafka.admin();
      await admin.connect();
      return admin;
    })();
    const connecting = this.admin;
    connecting.catch(() => {
      // A failed connect is tried again next time.
      if (this.admin === connecting) this.admin = undefined;
    });
    return connecting;
  }

  /**
   * The transactional producer. Its id is stable per instance: a new one (a restarted instance, or a
   * replacement after a failed transaction, runtime/transaction.ts) aborts what the previous left open when it connects. With the confluent client this is
   * not what fences a zombie (its group generation is), so any ids will do.
   */
  private async newProducer(): Promise<KafkaProducer> {
    const producer = this.context.kafka.producer({ transactionalId: `${this.groupId}-${this.options.instanceId}` });
    await producer.connect();
    return producer;
  }

  private async deactivate(): Promise<void> {
    this.activation.abort();
    await this.consumer?.disconnect();
    await this.producer?.disconnect();
    const admin = this.admin;
    this.consumer = this.producer = this.admin = undefined;
    await admin?.then((connected) => connected.disconnect(), () => undefined);
    this.assigned = [];
    this.committedHere.clear();
    for (const store of this.options.stores) store.discard();
  }

  /** The longest one transaction's chunk may take: every try of every record in it, with the waits between. */
  private maxChunkMs(): number {
    const retry = resolveRetryOptions(this.options.retry);
    const perRecord = (retry.retries + 1) * (this.options.timeoutMs + retry.maxDelayMs);
    // librdkafka accepts 24 h at most; a member stuck that long is gone anyway.
    return Math.min(86_400_000, Math.max(300_000, this.options.maxRecordsPerTransaction * perRecord));
  }

  private async handleInOrder({ batch, resolveOffset, heartbeat, isActive }: BatchPayload): Promise<void> {
    const done = this.committedHere.get(partitionKey(batch.topic, batch.partition))?.next ?? null;
    const messages = done === null ? batch.messages : batch.messages.filter((message) => BigInt(message.offset) >= done);
    if (messages.length < batch.messages.length) resolveOffset((done! - 1n).toString());
    const keepBatch = this.batchTimer(isActive);
    // Records up to this offset go one per transaction: together their records were too large for one.
    let oneByOneThrough = -1n;
    for (let i = 0; i < messages.length; ) {
      if (!keepBatch()) return;
      const size = BigInt(messages[i]!.offset) <= oneByOneThrough ? 1 : this.options.maxRecordsPerTransaction;
      const chunk = messages.slice(i, i + size);
      let split = false;
      const finished = await this.inTransaction(heartbeat, async () => {
        const outputs: EncodedOutput[] = [];
        const records = chunk.map((message) => this.rawRecord(batch.topic, batch.partition, message));
        for (const record of records) outputs.push(...(await this.chain({ record, signal: this.activation.signal })));
        const last = chunk[chunk.length - 1]!;
        split = !(await this.commitBounded(outputs, records, (BigInt(last.offset) + 1n).toString()));
        if (split) oneByOneThrough = BigInt(last.offset);
        else resolveOffset(last.offset);
      });
      if (!finished) return;
      if (!split) i += chunk.length;
    }
  }

  /**
   * Commits a transaction's outputs with its input offset. When its records are too large for the broker (one of
   * them, or all of them together; found before sending, or the broker's refusal), a transaction of several input
   * records is not committed and false is returned: its records are redone one per transaction. A single input's
   * transaction then commits the input's dead letter instead, naming the reason, and the partition moves on.
   */
  private async commitBounded(outputs: readonly EncodedOutput[], records: readonly RawRecord[], nextOffset: string, metadata: string | null = null): Promise<boolean> {
    const { topic, partition } = records[0]!;
    try {
      await this.commit(outputs, topic, partition, nextOffset, metadata);
      return true;
    } catch (error) {
      if (!(error instanceof RecordTooLargeError)) throw error;
      // What the records changed in the stores is not kept: they are redone, or their input dead-lettered.
      for (const store of this.options.stores) store.discard();
      if (records.length > 1) return false;
      const { letter, output } = await encodeDeadLetter(this.options.name, this.context.serde, this.context.names, records[0]!, error, this.limits);
      await this.commit([output], topic, partition, nextOffset, metadata);
      this.deadLettered(letter);
      return true;
    }
  }

  private deadLettered(letter: DeadLetter): void {
    this.metrics.deadLettered++;
    this.options.onDeadLetter(letter);
  }

  /**
   * Runs one transaction's work with heartbeats going (slow handlers such as rollouts must not look dead to
   * the group coordinator). False when shutdown interrupted it; any other failure is rethrown, after the
   * stores drop their uncommitted changes.
   */
  private async inTransaction(heartbeat: () => Promise<void>, work: () => Promise<void>): Promise<boolean> {
    const beat = setInterval(() => void heartbeat().catch(() => undefined), this.options.heartbeatIntervalMs);
    try {
      await work();
    } catch (error) {
      for (const store of this.options.stores) store.discard();
      if (error instanceof HostUnavailableError && !this.activation.signal.aborted) this.leaveUntilHostAnswers(error);
      if (error instanceof ShutdownError || this.activation.signal.aborted) return false;
      throw error;
    } finally {
      clearInterval(beat);
    }
    await heartbeat();
    return true;
  }

  /**
   * One record per transaction, highest priority first within the batch. The committed offset is the lowest
   * record not handled yet, and the records handled above it travel in the commit's metadata, read back here
   * at the start of every batch, so a record is neither skipped nor handled twice across restarts.
   */
  private async handleByPriority({ batch, resolveOffset, heartbeat, isActive }: BatchPayload, priorityOf: (value: TopicValue<K>) => number): Promise<void> {
    const { topic, partition } = batch;
    const read = await this.committedProgress(topic, partition).catch((error: unknown) => {
      // Said here: the client logs an error thrown out of a batch only at a level we mute.
      if (!this.activation.signal.aborted) process.stderr.write(`[${this.options.name}] instance ${this.options.instanceId}: reading ${topic}[${partition}]'s committed progress failed, its records are fetched again (${errorMessage(error)})\n`);
      throw error;
    });
    const committed = freshestProgress(read, this.committedHere.get(partitionKey(topic, partition)));
    const handled = new Set(committed.handled);
    const progress: PartitionProgress = { next: committed.next, handled };
    const offsets = batch.messages.map((message) => BigInt(message.offset));
    const pending = batch.messages.filter((message) => !isHandled(progress, BigInt(message.offset))).slice(0, MAX_REORDERED);
    const topicKey = this.topicKeys.get(topic)!;
    const priorities = await Promise.all(
      pending.map(async (message) => {
        try {
          return priorityOf(await this.context.serde.decode(topicKey, message.value));
        } catch {
          return 0; // undecodable: the handler chain dead-letters it in its turn
        }
      }),
    );
    // kafkajs resumes a partition after its last resolved offset: resolve only what the commit covers.
    let resolved = committed.next ?? offsets[0]!;
    const keepBatch = this.batchTimer(isActive);
    for (const index of byPriority(priorities)) {
      if (!keepBatch()) return;
      const message = pending[index]!;
      const finished = await this.inTransaction(heartbeat, async () => {
        const record = this.rawRecord(topic, partition, message);
        const outputs = await this.chain({ record, signal: this.activation.signal });
        handled.add(BigInt(message.offset));
        const next = nextToCommit(offsets, progress);
        await this.commitBounded(outputs, [record], next.toString(), encodeHandled(next, handled));
        if (next > resolved) {
          resolveOffset((next - 1n).toString());
          resolved = next;
        }
      });
      if (!finished) return;
    }
  }

  /**
   * Whether to go on with the batch in hand: not once it is stale or this instance stops, nor once it has been
   * held `yieldBatchAfterMs` (its unhandled records are fetched again, and a pending rebalance can complete).
   */
  private batchTimer(isActive: () => boolean): () => boolean {
    const since = performance.now();
    let first = true;
    return () => {
      const goOn = isActive() && !this.activation.signal.aborted && (first || performance.now() - since < this.options.yieldBatchAfterMs);
      first = false;
      return goOn;
    };
  }

  private async committedProgress(topic: string, partition: number): Promise<PartitionProgress> {
    const [committed] = await (await this.groupOffsets()).fetchGroupOffsets(this.groupId, [topic]);
    const entry = committed?.partitions.find((p) => p.partition === partition);
    return decodeProgress(entry?.offset, entry?.metadata);
  }

  /**
   * The host cannot run records (its engine is down): the record's transaction is not committed (its outputs and
   * offset go nowhere), the other in-flight handlers are aborted, and this instance leaves its group so the
   * group's healthy members take its partitions and redo the records from their last commit. It comes back as a
   * fresh member once the host answers a probe (or the probes are spent: the next failure sends it out again).
   * Runs beside eachBatch, which returns first: a consumer is not disconnected from inside its own batch. A
   * rejoin that fails (Kafka unreachable) is left unhandled and ends the process, as a failed start would.
   */
  private leaveUntilHostAnswers(cause: HostUnavailableError): void {
    if (this.rejoining || this.stopped) return;
    const what = `[${this.options.name}] instance ${this.options.instanceId}`;
    process.stderr.write(`${what}: ${cause.message}; leaving the group until the host answers\n`);
    // Aborted now, synchronously: the batch loop must not start another record on this host.
    this.activation.abort();
    const probe = async (): Promise<void> => {
      if (!(await this.options.hostAvailable!())) throw new ConnectionError(`${what}: what the host needs still does not answer`);
    };
    this.rejoining = (async () => {
      // Once the batch handler has returned: the client seeks back to its unhandled records then, while connected.
      await new Promise((resolve) => setImmediate(resolve));
      await this.deactivate();
      try {
        await withRetries(probe, this.options.hostProbe, this.lifetime.signal);
      } catch (error) {
        if (error instanceof ShutdownError || this.stopped) return;
        process.stderr.write(`${what}: ${errorMessage(error)} after ${this.options.hostProbe.retries + 1} probes; rejoining anyway\n`);
      }
      if (this.stopped) return;
      process.stderr.write(`${what}: the host answers again; rejoining the group\n`);
      await this.activate();
    })().finally(() => (this.rejoining = null));
  }

  /** The consumer stopped for good: leave and join again (rejoinAfterCrash), until stopped. */
  private rejoinAfterCrash(cause: Error): void {
    if (this.rejoining || this.stopped) return;
    this.activation.abort();
    const steps = { leave: () => this.deactivate(), join: () => this.activate() };
    this.rejoining = rejoinAfterCrash(`[${this.options.name}] instance ${this.options.instanceId}`, cause, steps, this.lifetime.signal).finally(() => (this.rejoining = null));
  }

  /** Graceful stop: in-flight handlers see their signal aborted; their uncommitted work is redone after restart. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.lifetime.abort();
    await this.rejoining?.catch(() => undefined);
    await this.deactivate();
    await this.lease?.leave();
  }

  private rawRecord(topic: string, partition: number, message: IncomingMessage): RawRecord {
    const topicKey = this.topicKeys.get(topic);
    if (topicKey === undefined) throw new Error(`${this.options.name} received a record from unexpected topic ${topic}`);
    return {
      topic,
      topicKey,
      partition,
      offset: message.offset,
      key: message.key,
      value: message.value,
      headers: message.headers,
      timestamp: message.timestamp,
    };
  }

  private async commit(outputs: readonly EncodedOutput[], topic: string, partition: number, nextOffset: string, metadata: string | null = null): Promise<void> {
    const records = [...outputs, ...this.options.stores.flatMap((store) => store.changelog())];
    // Checked before sending: a transaction the broker would refuse as too large is not begun.
    await this.limits.check(records, `a transaction of ${this.options.name} writes`, true);
    // With the consumer's group generation where the client sends it (KIP-447): a zombie's commit is refused.
    try {
      await this.producer!.commit(records, this.consumer!, [{ topic, partition, offset: nextOffset, metadata }]);
    } catch (error) {
      // Said here: the client logs an error thrown out of a batch only at a level we mute.
      if (!this.activation.signal.aborted && !(error instanceof RecordTooLargeError)) process.stderr.write(`[${this.options.name}] instance ${this.options.instanceId}: a transaction failed, its records are handled again (${errorMessage(error)})\n`);
      throw error;
    }
    this.committedHere.set(partitionKey(topic, partition), decodeProgress(nextOffset, metadata));
    for (const store of this.options.stores) store.commit();
    for (const output of outputs) this.metrics.committed.set(output.topic, (this.metrics.committed.get(output.topic) ?? 0) + 1);
  }
}

/** Creates the catalog's topics under the context's prefix (if missing) and registers their schemas; idempotent. */
export async function prepareTopics(context: ProcessorContext): Promise<void> {
  const admin = context.kafka.admin();
  await admin.connect();
  await ensureTopics(admin, catalogTopics(context.names)).finally(() => admin.disconnect());
  await context.serde.register();
}
