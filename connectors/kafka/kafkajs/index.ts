import { Kafka, logLevel, type Consumer, type KafkaConfig, type KafkaMessage, type LogEntry, type Producer, type RecordMetadata, type TopicMessages, type Transaction } from 'kafkajs';
import { ConnectionError, KafkaError, RecordTooLargeError, resolveRetryOptions, withRetries } from '../../../schemas/index.js';
import { headerText } from '../headers.js';
import { brokersSource, type KafkaLog, type KafkaLogLine, type ResolvedKafkaOptions } from '../options.js';
import { PartitionLedger, sendCompletely } from './complete-send.js';
import type {
  BatchPayload,
  ConsumerOptions,
  ConsumerRunOptions,
  IncomingMessage,
  KafkaAdmin,
  KafkaConsumer,
  KafkaPort,
  KafkaProducer,
  KafkaTransaction,
  NewTopic,
  OutgoingRecords,
  ProducerOptions,
  TopicPartitionOffset,
} from '../port.js';

const LEVELS = { nothing: logLevel.NOTHING, error: logLevel.ERROR, warn: logLevel.WARN, info: logLevel.INFO, debug: logLevel.DEBUG };
const LEVEL_NAMES = new Map<number, KafkaLogLine['level']>([
  [logLevel.ERROR, 'error'],
  [logLevel.WARN, 'warn'],
  [logLevel.INFO, 'info'],
  [logLevel.DEBUG, 'debug'],
]);

// kafkajs logs a partitioner migration warning and routine group chatter at warn level; keep stderr readable.
// Retriable conditions that kafkajs retries by itself are noise at warn/error level.
const MUTED = [
  /KafkaJSPartitionerWarning|default partitioner/i,
  /The group is rebalancing/i,
  /Restarting the consumer/i,
  /another concurrent operation on the same transaction/i,
  /coordinator is not available/i,
  /This is not the correct coordinator/i,
];

/** Hands kafkajs's entries to our logger as plain lines, never its JSON. */
export function kafkaLogCreator(log: KafkaLog): NonNullable<KafkaConfig['logCreator']> {
  return () => ({ namespace, level, log: entry }: LogEntry) => {
    const { message = '', timestamp: _t, logger: _l, ...fields } = entry;
    const text = `${String(message)} ${JSON.stringify(fields)}`;
    if (MUTED.some((pattern) => pattern.test(text))) return;
    log({ level: LEVEL_NAMES.get(level) ?? 'warn', namespace: namespace || 'kafka', message: String(message), fields });
  };
}

/**
 * kafkajs's errors as ours: an unreachable broker anywhere in the chain is a ConnectionError naming
 * KAFKA_BROKERS; any other KafkaJS error a KafkaError with kafkajs's own `retriable` verdict (by name:
 * kafkajs is CommonJS and exports no classes to ES modules); a record the broker refuses as too large a
 * RecordTooLargeError, never retried. Anything else passes unchanged.
 */
export function fromKafkajsError(error: unknown, resolved: ResolvedKafkaOptions): unknown {
  if (!(error instanceof Error) || error instanceof ConnectionError || error instanceof KafkaError || error instanceof RecordTooLargeError) return error;
  for (let current: unknown = error, depth = 0; depth < 5 && current instanceof Error; depth++, current = current.cause) {
    if (current.name === 'KafkaJSConnectionError') return unreachable(resolved, current.message, error);
  }
  if (!error.name.startsWith('KafkaJS')) return error;
  const { retriable } = error as Error & { retriable?: boolean };
  // kafkajs wraps the broker's error once its own retries are spent (KafkaJSNumberOfRetriesExceeded, KafkaJSNonRetriableError): the type is the innermost's.
  const type = errorTypeIn(error);
  // The same record is refused the same way however often it is sent.
  if (type !== undefined && TOO_LARGE_TYPES.has(type)) return new RecordTooLargeError(`kafka (kafkajs): ${error.message}`, null, null, null, error);
  // A fenced or aborted transaction stays fenced however often it is retried.
  const fenced = /PRODUCER_FENCED|INVALID_PRODUCER_EPOCH|TRANSACTIONAL_ID_AUTHORIZATION|INVALID_TXN_STATE/.test(type ?? '');
  // Stale metadata while a partition's leader moves: every topic we use was checked at start, so this passes once
  // the metadata catches up, however kafkajs labelled it after its own retries.
  const leaderMoving = type !== undefined && LEADER_MOVING.has(type);
  return new KafkaError(`kafka (kafkajs): ${error.message}`, type ?? error.name, { retriable: (retriable === true || leaderMoving) && !fenced, cause: error });
}

/** The broker's refusal of a record or of a whole batch as too large for the topic. */
const TOO_LARGE_TYPES = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE']);

/** Broker errors of a leader fail-over ("This server does not host this topic-partition" among them). */
const LEADER_MOVING = new Set(['UNKNOWN_TOPIC_OR_PARTITION', 'LEADER_NOT_AVAILABLE', 'NOT_LEADER_FOR_PARTITION', 'NOT_LEADER_OR_FOLLOWER']);

/** The broker error type of `error` or of the errors it wraps (kafkajs's `type`), innermost first. */
function errorTypeIn(error: Error): string | undefined {
  const chain: Error[] = [];
  for (let current: unknown = error; chain.length < 5 && current instanceof Error; current = current.cause) chain.push(current);
  return chain
    .reverse()
    .map((e) => (e as Error & { type?: string }).type)
    .find((type) => type !== undefined);
}

export const unreachable = (resolved: ResolvedKafkaOptions, reason: string, cause?: unknown): ConnectionError =>
  new ConnectionError(`cannot reach Kafka at ${brokersSource(resolved)}: ${reason}; start it with \`trialrun stack up\`, or point KAFKA_BROKERS at a running broker`, cause);


const incoming = (message: KafkaMessage): IncomingMessage => ({
  key: message.key,
  value: message.value,
  offset: message.offset,
  timestamp: message.timestamp,
  headers: headerText(message.headers),
});

const outgoing = (records: OutgoingRecords) => ({ topic: records.topic, messages: records.messages.map((m) => ({ ...m, headers: m.headers ? { ...m.headers } : undefined })) });

/** Group offsets by topic, metadata included (kafkajs passes it through, though its types leave it out). */
function byTopic(offsets: readonly TopicPartitionOffset[]): Array<{ topic: string; partitions: Array<{ partition: number; offset: string; metadata: string | null }> }> {
  const topics = new Map<string, Array<{ partition: number; offset: string; metadata: string | null }>>();
  for (const { topic, partition, offset, metadata } of offsets) {
    const list = topics.get(topic) ?? [];
    list.push({ partition, offset, metadata: metadata ?? null });
    topics.set(topic, list);
  }
  return [...topics].map(([topic, partitions]) => ({ topic, partitions }));
}

/** The kafkajs implementation of the port. */
export function kafkajsPort(resolved: ResolvedKafkaOptions): KafkaPort {
  const kafka = kafkajsClient(resolved);
  const mapped = <T>(work: Promise<T>): Promise<T> => work.catch((error: unknown) => Promise.reject(fromKafkajsError(error, resolved)));
  return {
    client: 'kafkajs',
    admin: () => kafkajsAdmin(kafka, mapped),
    producer: (options = {}) => kafkajsProducer(kafka, options, mapped, resolved.log),
    consumer: (options) => new KafkajsConsumer(kafka, options, mapped),
  };
}

export function kafkajsClient(resolved: ResolvedKafkaOptions): Kafka {
  return new Kafka({
    clientId: resolved.clientId,
    brokers: [...resolved.brokers],
    connectionTimeout: resolved.connectionTimeoutMs,
    logLevel: LEVELS[resolved.logLevel],
    logCreator: kafkaLogCreator(resolved.log),
    // No client-wide retry override: kafkajs gives idempotent producers unlimited retries, which EOS needs.
  });
}

export type Mapped = <T>(work: Promise<T>) => Promise<T>;

export function kafkajsAdmin(kafka: Kafka, mapped: Mapped): KafkaAdmin {
  const admin = kafka.admin();
  return {
    connect: () => mapped(admin.connect()),
    disconnect: () => admin.disconnect(),
    listTopics: () => mapped(admin.listTopics()),
    createTopics: async (topics: readonly NewTopic[]) => {
      await mapped(
        admin.createTopics({
          waitForLeaders: true,
          topics: topics.map((t) => ({
            topic: t.topic,
            numPartitions: t.partitions,
            replicationFactor: t.replicationFactor ?? 1,
            configEntries: Object.entries(t.config ?? {}).map(([name, value]) => ({ name, value })),
          })),
        }),
      );
    },
    deleteTopics: (topics) => mapped(admin.deleteTopics({ topics: [...topics] })),
    fetchTopicOffsets: async (topic) => (await mapped(admin.fetchTopicOffsets(topic))).map(({ partition, low, high }) => ({ partition, low, high })),
    fetchTopicOffsetsByTimestamp: async (topic, timestamp) => {
      const [byTime, ends] = await Promise.all([mapped(admin.fetchTopicOffsetsByTimestamp(topic, timestamp)), mapped(admin.fetchTopicOffsets(topic))]);
      return byTime.map(({ partition, offset }) => ({ partition, offset: BigInt(offset) < 0n ? ends.find((p) => p.partition === partition)!.high : offset }));
    },
    brokerCount: async () => (await mapped(admin.describeCluster())).brokers.length,
    describeTopic: async (topic, configNames) => {
      const metadata = await mapped(admin.fetchTopicMetadata({ topics: [topic] }));
      const described = await mapped(admin.describeConfigs({ resources: [{ type: 2 /* TOPIC */, name: topic, configNames: [...configNames] }], includeSynonyms: false }));
      const config = Object.fromEntries((described.resources[0]?.configEntries ?? []).map((entry) => [entry.configName, entry.configValue]));
      return { partitions: metadata.topics[0]?.partitions.length ?? 0, config };
    },
    setGroupOffsets: async (groupId, offsets) => {
      for (const { topic, partitions } of byTopic(offsets)) await mapped(admin.setOffsets({ groupId, topic, partitions }));
    },
    listGroups: async () => (await mapped(admin.listGroups())).groups.map((group) => group.groupId),
    deleteGroups: async (groupIds) => void (await mapped(admin.deleteGroups([...groupIds]))),
    fetchGroupOffsets: async (groupId, topics) => {
      // A topic that does not exist holds no offsets of any group (kafkajs would fail the whole request).
      const existing = new Set(await mapped(admin.listTopics()));
      const present = topics.filter((topic) => existing.has(topic));
      if (present.length === 0) return [];
      return (await mapped(admin.fetchOffsets({ groupId, topics: present }))).map(({ topic, partitions }) => ({
        topic,
        partitions: partitions.map(({ partition, offset, metadata }) => ({ partition, offset, metadata: metadata ?? null })),
      }));
    },
  };
}

/** The port's sendBatch over a kafkajs sendBatch (a producer's or a transaction's): every partition answered for. */
const completeSends =
  (sendBatch: (topicMessages: TopicMessages[]) => Promise<RecordMetadata[]>, ledger: PartitionLedger, log: KafkaLog) =>
  (batch: readonly OutgoingRecords[]): Promise<void> =>
    sendCompletely(sendBatch, batch.map(outgoing), ledger, log);

function kafkajsProducer(kafka: Kafka, options: ProducerOptions, mapped: Mapped, log: KafkaLog): KafkaProducer {
  const idempotent = options.transactionalId !== undefined || (options.idempotent ?? true);
  const ledger = new PartitionLedger();
  // kafkajs keeps order under retries only with one request in flight, which idempotence needs.
  const producer: Producer = kafka.producer({
    transactionalId: options.transactionalId,
    transactionTimeout: options.transactionTimeoutMs,
    idempotent,
    ...(idempotent ? { maxInFlightRequests: 1 } : {}),
    createPartitioner: ledger.createPartitioner,
  });
  const sendAll = completeSends((topicMessages) => mapped(producer.sendBatch({ topicMessages })), ledger, log);
  return {
    connect: () => mapped(producer.connect()),
    disconnect: () => producer.disconnect(),
    send: (records) => sendAll([records]),
    sendBatch: sendAll,
    transaction: async () => kafkajsTransaction(await mapped(producer.transaction()), mapped, ledger, log),
  };
}

/**
 * The transaction coordinator answers AddOffsetsToTxn with CONCURRENT_TRANSACTIONS until the markers of the
 * producer's previous transaction are written (slow with three brokers, slower with one down). The broker expects
 * clients to retry it, but kafkajs sends that request once, outside its retrier, so the adapter retries it.
 */
const coordinatorBusy = (error: unknown): boolean => error instanceof KafkaError && error.code === 'CONCURRENT_TRANSACTIONS';
const COORDINATOR_BUSY_RETRY = resolveRetryOptions({ retries: 12, initialDelayMs: 50, maxDelayMs: 2000 });
/** Transactions end with their producer, not with a signal of their own. */
const NEVER_STOPPED = new AbortController().signal;

function kafkajsTransaction(transaction: Transaction, mapped: Mapped, ledger: PartitionLedger, log: KafkaLog): KafkaTransaction {
  const sendAll = completeSends((topicMessages) => mapped(transaction.sendBatch({ topicMessages })), ledger, log);
  return {
    send: (records) => sendAll([records]),
    sendBatch: sendAll,
    // TxnOffsetCommit v1: the group id only, no generation; fencing rests on the transactional id.
    sendOffsets: (consumer, offsets) =>
      withRetries(() => mapped(transaction.sendOffsets({ consumerGroupId: consumer.groupId, topics: byTopic(offsets) })), COORDINATOR_BUSY_RETRY, NEVER_STOPPED, coordinatorBusy),
    commit: () => mapped(transaction.commit()),
    abort: () => mapped(transaction.abort()),
  };
}

class KafkajsConsumer implements KafkaConsumer {
  private readonly consumer: Consumer;

  constructor(
    kafka: Kafka,
    readonly options: ConsumerOptions,
    private readonly mapped: Mapped,
  ) {
    this.consumer = kafka.consumer({
      groupId: options.groupId,
      readUncommitted: options.readUncommitted ?? false,
      allowAutoTopicCreation: false,
      sessionTimeout: options.sessionTimeoutMs ?? 45_000,
      heartbeatInterval: options.heartbeatIntervalMs ?? 3_000,
      // kafkajs's default fetch of 1 MiB per partition stays: kafkajs sends a call's records to a partition
      // as one request, so a batch copied whole (a replay) must stay under the broker's message.max.bytes.
    });
    const { onAssignment } = options;
    if (onAssignment) {
      this.consumer.on(this.consumer.events.GROUP_JOIN, ({ payload }) =>
        onAssignment(Object.entries(payload.memberAssignment).flatMap(([topic, partitions]) => partitions.map((partition) => ({ topic, partition })))),
      );
    }
  }

  get groupId(): string {
    return this.options.groupId;
  }

  connect(): Promise<void> {
    return this.mapped(this.consumer.connect());
  }

  disconnect(): Promise<void> {
    return this.consumer.disconnect();
  }

  subscribe(topics: readonly string[]): Promise<void> {
    return this.mapped(this.consumer.subscribe({ topics: [...topics], fromBeginning: this.options.fromBeginning ?? true }));
  }

  async run({ eachBatch, onPosition, onCrash }: ConsumerRunOptions): Promise<void> {
    // kafkajs also reports the crashes it restarts the consumer after by itself: only a final one is the port's.
    if (onCrash) {
      this.consumer.on(this.consumer.events.CRASH, ({ payload }) => {
        if (!payload.restart) onCrash(payload.error);
      });
    }
    // Fetches holding only transaction markers never reach eachBatch; this event sees every batch.
    if (onPosition) {
      this.consumer.on(this.consumer.events.END_BATCH_PROCESS, ({ payload }) => {
        if (payload.lastOffset !== null && payload.lastOffset !== undefined) onPosition(payload.topic, payload.partition, BigInt(payload.lastOffset) + 1n);
      });
    }
    await this.mapped(
      this.consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
          const payload: BatchPayload = {
            batch: { topic: batch.topic, partition: batch.partition, messages: batch.messages.map(incoming) },
            resolveOffset,
            heartbeat,
            isActive: () => isRunning() && !isStale(),
          };
          await eachBatch(payload);
        },
      }),
    );
  }

  seek(topic: string, partition: number, offset: string): void {
    this.consumer.seek({ topic, partition, offset });
  }

  commitOffsets(offsets: readonly TopicPartitionOffset[]): Promise<void> {
    return this.mapped(this.consumer.commitOffsets(offsets.map(({ topic, partition, offset, metadata }) => ({ topic, partition, offset, metadata: metadata ?? null }))));
  }
}
