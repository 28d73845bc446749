import { createRequire } from 'node:module';
import type { KafkaJS } from '@confluentinc/kafka-javascript';
import { ConfigError, ConnectionError, KafkaError, RecordTooLargeError } from '../../../schemas/index.js';
import { fromKafkajsError, kafkajsAdmin, kafkajsClient, unreachable } from '../kafkajs/index.js';
import { headerText } from '../headers.js';
import type { KafkaLogLine, ResolvedKafkaOptions } from '../options.js';
import type {
  ConsumerOptions,
  ConsumerRunOptions,
  IncomingMessage,
  KafkaAdmin,
  KafkaConsumer,
  KafkaPort,
  KafkaProducer,
  KafkaTransaction,
  OutgoingRecords,
  ProducerOptions,
  TopicPartitionOffset,
} from '../port.js';

type Confluent = typeof KafkaJS;

/** librdkafka error codes (lib/error.js) this mapping tells apart. */
const UNREACHABLE_CODES = new Set([-195 /* ERR__TRANSPORT */, -193 /* ERR__RESOLVE */, -187 /* ERR__ALL_BROKERS_DOWN */]);
const FENCED_CODES = new Set([-144 /* ERR__FENCED */, 47 /* ERR_INVALID_PRODUCER_EPOCH */, 90 /* ERR_PRODUCER_FENCED */, 82 /* ERR_FENCED_INSTANCE_ID */]);
const TOPIC_ALREADY_EXISTS = 36;
const NOT_THERE_CODES = new Set([3 /* ERR_UNKNOWN_TOPIC_OR_PART */, -188 /* ERR__UNKNOWN_TOPIC */, -190 /* ERR__UNKNOWN_PARTITION */]);
/**
 * A coordinator that is loading, moved or not yet elected (after a broker restart): retriable by the protocol,
 * whatever librdkafka's flag says; `Failed to initialize Producer ID: Coordinator load in progress` came unflagged.
 */
const COORDINATOR_CODES = new Set([14 /* ERR_COORDINATOR_LOAD_IN_PROGRESS */, 15 /* ERR_COORDINATOR_NOT_AVAILABLE */, 16 /* ERR_NOT_COORDINATOR */]);
/** The broker's refusal of a record or batch as too large, and librdkafka's own check against its message.max.bytes (the same code). */
const TOO_LARGE_CODES = new Set([10 /* ERR_MSG_SIZE_TOO_LARGE */, 18 /* ERR_RECORD_LIST_TOO_LARGE */]);

/**
 * The confluent client's errors as ours: an unreachable broker is a ConnectionError naming KAFKA_BROKERS;
 * any other client error a KafkaError whose `retriable` is librdkafka's verdict, never for a fenced or fatal
 * producer (it stays fenced) nor for a topic that does not exist (it will not appear by retrying), always for a
 * coordinator on the move. A record
 * refused as too large is a RecordTooLargeError, never retried.
 */
export function fromConfluentError(error: unknown, resolved: ResolvedKafkaOptions): unknown {
  if (!(error instanceof Error) || error instanceof ConnectionError || error instanceof KafkaError || error instanceof RecordTooLargeError || error instanceof ConfigError) return error;
  const { code, retriable, fatal } = error as Error & { code?: number; retriable?: boolean; fatal?: boolean };
  if (!error.name.startsWith('KafkaJS') && typeof code !== 'number') return error;
  if (code !== undefined && UNREACHABLE_CODES.has(code)) return unreachable(resolved, error.message, error);
  if (code !== undefined && TOO_LARGE_CODES.has(code)) return new RecordTooLargeError(`kafka (confluent): ${error.message}`, null, null, null, error);
  const final = fatal === true || (code !== undefined && (FENCED_CODES.has(code) || NOT_THERE_CODES.has(code)));
  const coordinatorMoving = code !== undefined && COORDINATOR_CODES.has(code);
  return new KafkaError(`kafka (confluent): ${error.message}`, String(code ?? error.name), { retriable: (retriable === true || coordinatorMoving) && !final, cause: error });
}

let loaded: Confluent | undefined;
/** Loaded on first use, so a machine without the native build still runs everything on kafkajs. */
function confluentClient(): Confluent {
  if (loaded) return loaded;
  try {
    loaded = (createRequire(import.meta.url)('@confluentinc/kafka-javascript') as { KafkaJS: Confluent }).KafkaJS;
    return loaded;
  } catch (error) {
    throw new ConfigError(
      `KafkaOptions.client "confluent": @confluentinc/kafka-javascript cannot be loaded (${error instanceof Error ? error.message.split('\n')[0] : String(error)}); run scripts/setup.sh to build it, or set TRIALRUN_KAFKA_CLIENT=kafkajs`,
    );
  }
}

const LOG_ORDER: readonly KafkaLogLine['level'][] = ['error', 'warn', 'info', 'debug'];
// Routine group and transaction chatter that librdkafka recovers from by itself.
const MUTED = [/rebalanc/i, /coordinator/i, /Consumer encountered error while processing message/i];

/** Our logger in the shape the confluent client's KafkaJS layer calls. */
function confluentLogger(resolved: ResolvedKafkaOptions, namespace = 'kafka'): KafkaJS.Logger {
  const limit = resolved.logLevel === 'nothing' ? -1 : LOG_ORDER.indexOf(resolved.logLevel);
  const at = (level: KafkaLogLine['level']) => (message: string, extra?: object) => {
    if (LOG_ORDER.indexOf(level) > limit || MUTED.some((pattern) => pattern.test(message))) return;
    resolved.log({ level, namespace, message, fields: { ...(extra ?? {}) } });
  };
  return {
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
    namespace: (name: string) => confluentLogger(resolved, name),
    setLogLevel: () => undefined,
  };
}

/**
 * Settings for librdkafka, chosen with bench/kafka.ts (docs/kafka.md): linger and batch size let the producer
 * fill requests; the consumer hands eachBatch whatever one partition's fetch holds (-1), where the default 32
 * costs a callback and, in a processor, a transaction per 32 records.
 */
export const CONFLUENT_PRODUCER_TUNING = { 'linger.ms': 10, 'batch.num.messages': 10_000 } as const;
export const CONFLUENT_CONSUMER_TUNING = { 'js.consumer.max.batch.size': -1, 'fetch.wait.max.ms': 100 } as const;

/** librdkafka's largest max.poll.interval.ms (24 h): a consumer configured above it is refused at creation. */
const RDKAFKA_MAX_POLL_INTERVAL_MS = 86_400_000;

/**
 * The kafkaJS `rebalanceTimeout` for a wanted time between polls. The kafkaJS layer hands librdkafka twice that
 * (its own loop polls in between), so the wanted time is capped at half librdkafka's largest: a member stuck
 * for 12 h is as gone as one stuck for 24.
 */
export const rebalanceTimeoutFor = (maxPollIntervalMs: number): number => Math.min(maxPollIntervalMs, RDKAFKA_MAX_POLL_INTERVAL_MS / 2);

/** The @confluentinc/kafka-javascript (librdkafka) implementation of the port. */
export function confluentPort(resolved: ResolvedKafkaOptions): KafkaPort {
  const { Kafka, logLevel } = confluentClient();
  const levels = { nothing: logLevel.NOTHING, error: logLevel.ERROR, warn: logLevel.WARN, info: logLevel.INFO, debug: logLevel.DEBUG };
  const kafka = new Kafka({
    kafkaJS: {
      clientId: resolved.clientId,
      brokers: [...resolved.brokers],
      connectionTimeout: resolved.connectionTimeoutMs,
      logLevel: levels[resolved.logLevel],
      logger: confluentLogger(resolved),
    },
  });
  const mapped = <T>(work: Promise<T>): Promise<T> => work.catch((error: unknown) => Promise.reject(fromConfluentError(error, resolved)));
  return {
    client: 'confluent',
    admin: () => confluentAdmin(kafka, confluentClient(), mapped, resolved),
    producer: (options = {}) => confluentProducer(kafka, options, mapped),
    consumer: (options) => new ConfluentConsumer(kafka, options, mapped),
  };
}

type Mapped = <T>(work: Promise<T>) => Promise<T>;

function confluentAdmin(kafka: KafkaJS.Kafka, client: Confluent, mapped: Mapped, resolved: ResolvedKafkaOptions): KafkaAdmin {
  const admin = kafka.admin();
  // Some admin calls go through kafkajs, connected only when first used: librdkafka's JavaScript binding has
  // no DescribeConfigs and no AlterConsumerGroupOffsets, and its ListConsumerGroupOffsets crashes the process
  // (fetchGroupOffsets, below).
  let fallback: Promise<KafkaAdmin> | undefined;
  const viaKafkajs = (): Promise<KafkaAdmin> => {
    if (!fallback) {
      const connecting = (async () => {
        const connected = kafkajsAdmin(kafkajsClient(resolved), (work) => work.catch((error: unknown) => Promise.reject(fromKafkajsError(error, resolved))));
        await connected.connect();
        return connected;
      })();
      fallback = connecting;
      // A failed connect is not kept: the next call connects again.
      connecting.catch(() => {
        if (fallback === connecting) fallback = undefined;
      });
    }
    return fallback;
  };
  const committed = { isolationLevel: client.IsolationLevel.READ_COMMITTED };
  const listTopics = (): Promise<string[]> => mapped(admin.listTopics());
  return {
    connect: () => mapped(admin.connect()),
    disconnect: async () => {
      const connected = fallback;
      fallback = undefined;
      await connected?.then((kafkajs) => kafkajs.disconnect(), () => undefined);
      await admin.disconnect();
    },
    listTopics,
    describeTopic: async (topic, configNames) => (await viaKafkajs()).describeTopic(topic, configNames),
    brokerCount: async () => (await viaKafkajs()).brokerCount(),
    setGroupOffsets: async (groupId, offsets) => (await viaKafkajs()).setGroupOffsets(groupId, offsets),
    listGroups: async () => (await mapped(admin.listGroups())).groups.map((group) => group.groupId),
    deleteGroups: async (groupIds) => void (await mapped(admin.deleteGroups([...groupIds]))),
    createTopics: async (topics) => {
      await mapped(
        admin
          .createTopics({
            topics: topics.map((t) => ({
              topic: t.topic,
              numPartitions: t.partitions,
              replicationFactor: t.replicationFactor ?? 1,
              configEntries: Object.entries(t.config ?? {}).map(([name, value]) => ({ name, value })),
            })),
          })
          // Created meanwhile by another process (kafkajs says the same with `false`): what was asked for exists.
          .catch((error: unknown) => {
            if ((error as { code?: number }).code !== TOPIC_ALREADY_EXISTS) throw error;
          }),
      );
      // CreateTopics answers once the controller has them; a producer needs each partition's leader.
      const deadline = Date.now() + 30_000;
      for (;;) {
        const metadata = await admin.fetchTopicMetadata({ topics: topics.map((t) => t.topic) }).catch(() => []);
        const led = metadata.length === topics.length && metadata.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0));
        if (led) return;
        if (Date.now() > deadline) throw new KafkaError(`topics ${topics.map((t) => t.topic).join(', ')} have no leader after 30 s`, 'NO_LEADER', { retriable: true });
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    deleteTopics: (topics) => mapped(admin.deleteTopics({ topics: [...topics] })),
    fetchTopicOffsets: async (topic) => (await mapped(admin.fetchTopicOffsets(topic, committed))).map(({ partition, low, high }) => ({ partition, low, high })),
    fetchTopicOffsetsByTimestamp: async (topic, timestamp) => {
      const [byTime, ends] = await Promise.all([mapped(admin.fetchTopicOffsetsByTimestamp(topic, timestamp, committed)), mapped(admin.fetchTopicOffsets(topic, committed))]);
      return byTime.map(({ partition, offset }) => ({ partition, offset: BigInt(offset) < 0n ? ends.find((p) => p.partition === partition)!.high : offset }));
    },
    // Through kafkajs: librdkafka 2.15.1's ListConsumerGroupOffsets dereferences a null pointer when the broker
    // answers NOT_COORDINATOR (a group's coordinator moved, as after a broker's return): rd_kafka_handle_OffsetFetch
    // asks the handle's consumer group to find the coordinator again, and an admin handle has none (issue 46: the
    // SIGSEGV of the broker-fault run, in a core: rd_kafka_cgrp_op(rkcg=0x0, ..., RD_KAFKA_OP_COORD_QUERY,
    // NOT_COORDINATOR) under rd_kafka_ListConsumerGroupOffsetsResponse_parse). kafkajs finds the coordinator again.
    // The binding writes a transaction's offset metadata with C's terminating NUL, which librdkafka's own reads
    // drop and kafkajs's keep: dropped here too, so readers see what was sent.
    fetchGroupOffsets: async (groupId, topics) =>
      (await (await viaKafkajs()).fetchGroupOffsets(groupId, topics)).map(({ topic, partitions }) => ({
        topic,
        partitions: partitions.map((entry) => ({ ...entry, metadata: entry.metadata?.replace(/\0$/, '') || null })),
      })),
  };
}

const outgoing = (records: OutgoingRecords): KafkaJS.ProducerRecord => ({
  topic: records.topic,
  messages: records.messages.map((m) => ({ key: m.key ?? null, value: m.value, partition: m.partition, timestamp: m.timestamp, headers: m.headers ? { ...m.headers } : undefined })),
});

/**
 * The gate in front of one client handle's native calls. The binding runs librdkafka's transactional calls
 * (init, begin, send offsets, commit, abort) on libuv's worker threads without the connection lock that its
 * disconnect takes before destroying the handle, and sendOffsetsToTransaction also reads the consumer's handle with
 * no check. A handle destroyed under such a call is freed memory in use (SIGSEGV), or a deadlock: librdkafka's
 * main thread, terminating, waits for the running call to leave the transaction API's condition variable, the call
 * waits for a reply the main thread no longer sends, and the destroy waits for the main thread (issue 46: seen in
 * a core's threads, two destroys and two sends of offsets holding all four of libuv's threads for good, after
 * which every later native call, and every file read, waited behind them).
 *
 * So once a disconnect is asked for, no native call may start on the handle (it is refused, retriable: a new
 * client will do it), and the handle is destroyed only when every call already running has returned: the
 * disconnect waits a while for them, then returns (said on stderr) and the destroy follows when they do; should
 * one never return, the handle stays open rather than be destroyed under it. The refusal is the
 * part that was missing before: a call that started after the disconnect was asked for, while it waited for the
 * calls before (a transaction's send of offsets once its deadline had passed and its records were sent), ran
 * beside the destroy.
 */
export class NativeCalls {
  private count = 0;
  private closing = false;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly what: string) {}

  get inFlight(): number {
    return this.count;
  }

  /** A disconnect was asked for: no native call may start from now on. */
  get isClosing(): boolean {
    return this.closing;
  }

  /** Connected again (a consumer may connect after a disconnect): calls may start. */
  open(): void {
    this.closing = false;
  }

  /** Starts `call` and counts it until it settles, or refuses it (CLIENT_CLOSING) once a disconnect was asked for. */
  run<T>(call: () => Promise<T>): Promise<T> {
    if (this.closing) {
      return Promise.reject(new KafkaError(`kafka (confluent): ${this.what} is disconnecting; no native call may start on its handle`, 'CLIENT_CLOSING', { retriable: true }));
    }
    this.count++;
    let work: Promise<T>;
    try {
      work = call();
    } catch (error) {
      work = Promise.reject(error);
    }
    return work.finally(() => {
      if (--this.count === 0) for (const resolve of this.waiting.splice(0)) resolve();
    });
  }

  /**
   * Refuses every later call, then runs `disconnect` once no native call is in flight; false (and `disconnect` not
   * run) if one is still running after `waitMs`.
   */
  async disconnectWhenIdle(disconnect: () => Promise<void>, waitMs = NATIVE_CALL_WAIT_MS): Promise<boolean> {
    this.closing = true;
    if (this.count > 0) {
      const idle = new Promise<void>((resolve) => this.waiting.push(resolve));
      let timer: NodeJS.Timeout | undefined;
      const inTime = await Promise.race([idle.then(() => true), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), waitMs)))]).finally(() => clearTimeout(timer));
      if (!inTime) {
        process.stderr.write(`[kafka] ${this.what}: ${this.count} native call(s) still running after ${waitMs} ms; its handle is destroyed when they return, not under them\n`);
        // However late they return: a handle left open keeps librdkafka's threads running and the process from
        // ever exiting (issue 46: a test process that passed and never ended). Not if it was connected again.
        void idle.then(() => (this.closing ? disconnect() : undefined)).catch(() => undefined);
        return false;
      }
    }
    await disconnect();
    return true;
  }
}

/** Longer than the native transactional calls' own timeouts (send offsets 30 s, commit and abort 5 s each). */
const NATIVE_CALL_WAIT_MS = 60_000;

function confluentProducer(kafka: KafkaJS.Kafka, options: ProducerOptions, mapped: Mapped): KafkaProducer {
  const idempotent = options.transactionalId !== undefined || (options.idempotent ?? true);
  const producer = kafka.producer({
    kafkaJS: {
      idempotent,
      allowAutoTopicCreation: false,
      ...(options.transactionalId !== undefined ? { transactionalId: options.transactionalId } : {}),
      ...(options.transactionTimeoutMs !== undefined ? { transactionTimeout: options.transactionTimeoutMs } : {}),
    },
    ...CONFLUENT_PRODUCER_TUNING,
  });
  const native = new NativeCalls(`producer ${options.transactionalId ?? ''}`.trim());
  // A send waits for its delivery reports from the handle: counted like the transaction's steps, so a producer
  // dropped at a transaction's deadline while its records wait for a broker is not destroyed under them (the
  // SIGSEGVs the chaos run saw 75 s after a broker kill).
  const sendBatch = async (batch: readonly OutgoingRecords[]): Promise<void> => void (await native.run(() => mapped(producer.sendBatch({ topicMessages: batch.map(outgoing) }))));
  const send = async (records: OutgoingRecords): Promise<void> => void (await native.run(() => mapped(producer.send(outgoing(records)))));
  return {
    // Connecting runs init_transactions on a worker thread: counted like the rest, so a disconnect waits for it.
    connect: async () => {
      try {
        await native.run(() => mapped(producer.connect()));
      } catch (error) {
        // A transactional producer whose registration was refused (a coordinator loading, a fenced id) has a
        // live handle: librdkafka's threads reconnecting for the rest of the process, which then never exits,
        // and no caller holds it to disconnect (issue 46: the broker-fault run left one behind). Destroyed here,
        // so a failed connect leaves nothing running.
        await native.disconnectWhenIdle(() => producer.disconnect()).catch(() => undefined);
        throw error;
      }
    },
    disconnect: async () => void (await native.disconnectWhenIdle(() => producer.disconnect())),
    send,
    sendBatch,
    transaction: async () => {
      // The client's producer is its own transaction: one at a time.
      await native.run(() => mapped(producer.transaction()));
      const transaction: KafkaTransaction = {
        send,
        sendBatch,
        sendOffsets: (consumer, offsets) => native.run(() => sendOffsetsWithMetadata(producer, consumer, offsets, mapped)),
        commit: () => native.run(() => mapped(producer.commit())),
        abort: () => native.run(() => mapped(producer.abort())),
      };
      return transaction;
    },
  };
}

interface NativeProducer {
  sendOffsetsToTransaction(offsets: unknown[], consumer: unknown, timeoutMs: number, callback: (error: unknown) => void): void;
}

/**
 * KIP-447: the offsets go with the consumer's group metadata (group, generation, member), so the broker
 * refuses them from an instance that has lost the partitions. The client's KafkaJS layer drops offset
 * metadata, so this calls its native producer, which carries it.
 */
async function sendOffsetsWithMetadata(producer: KafkaJS.Producer, consumer: KafkaConsumer, offsets: readonly TopicPartitionOffset[], mapped: Mapped): Promise<void> {
  if (!(consumer instanceof ConfluentConsumer)) throw new ConfigError('sendOffsets on the confluent client needs a consumer of the same client (its group metadata)');
  const native = (producer as unknown as { _getInternalClient(): NativeProducer })._getInternalClient();
  const list = offsets.map(({ topic, partition, offset, metadata }) => ({ topic, partition, offset: Number(offset), ...(metadata ? { metadata } : {}) }));
  // The native call reads the consumer's handle without a check: counted on the consumer's gate too, so the
  // consumer is not destroyed under it, and refused once the consumer is disconnecting.
  await consumer.nativeCalls.run(() =>
    mapped(
      new Promise<void>((resolve, reject) =>
        native.sendOffsetsToTransaction(list, consumer.nativeClient(), 30_000, (error) => (error ? reject(asLibrdkafkaError(error)) : resolve())),
      ),
    ),
  );
}

/** The native layer's error object, with its code and flags, as an Error the mapping reads. */
function asLibrdkafkaError(error: unknown): Error {
  if (error instanceof Error) return error;
  const { message, code, retriable, fatal } = error as { message?: string; code?: number; retriable?: boolean; fatal?: boolean };
  return Object.assign(new Error(message ?? String(error)), { name: 'KafkaJSError', code, retriable, fatal });
}

interface NativeConsumer {
  position(partitions: Array<{ topic: string; partition: number }>): Array<{ topic: string; partition: number; offset: number }>;
}

const POSITION_POLL_MS = 100;
/** One map key per topic partition (a NUL cannot occur in a topic name). */
const partitionKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;
const ASSIGN_PARTITIONS = -175; // ERR__ASSIGN_PARTITIONS: the rebalance callback's "these are yours now"

const REVOKE_PARTITIONS = -174; // ERR__REVOKE_PARTITIONS

/**
 * The client's rebalance callback, reporting the whole assignment after each assignment step; the client
 * then assigns as usual. Eager rebalances revoke everything and assign the new set; cooperative ones revoke
 * and assign only what moves, so the set is kept here. Revocations alone are not reported: an eager
 * rebalance's revoke-all is followed by the assignment, and reporting the empty set between would make a
 * member that keeps its partitions look as if it lost them for a moment.
 */
export function rebalanceListener(onAssignment: NonNullable<ConsumerOptions['onAssignment']>) {
  const current = new Map<string, { topic: string; partition: number }>();
  return (event: { code?: number }, assignment: Array<{ topic: string; partition: number }>): void => {
    for (const { topic, partition } of assignment) {
      if (event.code === ASSIGN_PARTITIONS) current.set(partitionKey(topic, partition), { topic, partition });
      else if (event.code === REVOKE_PARTITIONS) current.delete(partitionKey(topic, partition));
    }
    if (event.code === ASSIGN_PARTITIONS) onAssignment([...current.values()]);
  };
}

class ConfluentConsumer implements KafkaConsumer {
  private readonly consumer: KafkaJS.Consumer;
  private positionTimer: NodeJS.Timeout | undefined;
  /** Producers' sendOffsetsToTransaction calls that read this consumer's native handle. */
  readonly nativeCalls: NativeCalls;

  constructor(
    kafka: KafkaJS.Kafka,
    readonly options: ConsumerOptions,
    private readonly mapped: Mapped,
  ) {
    this.nativeCalls = new NativeCalls(`consumer of group ${options.groupId}`);
    this.consumer = kafka.consumer({
      kafkaJS: {
        groupId: options.groupId,
        readUncommitted: options.readUncommitted ?? false,
        fromBeginning: options.fromBeginning ?? true,
        autoCommit: false,
        allowAutoTopicCreation: false,
        sessionTimeout: options.sessionTimeoutMs ?? 45_000,
        heartbeatInterval: options.heartbeatIntervalMs ?? 3_000,
        // librdkafka heartbeats by itself; what ends a stuck member is the time between polls.
        rebalanceTimeout: rebalanceTimeoutFor(options.maxPollIntervalMs ?? 300_000),
        ...(options.sticky ? { partitionAssigners: ['cooperative-sticky' as KafkaJS.PartitionAssigners] } : {}),
      },
      ...CONFLUENT_CONSUMER_TUNING,
      ...(options.onAssignment ? { rebalance_cb: rebalanceListener(options.onAssignment) } : {}),
    });
  }

  get groupId(): string {
    return this.options.groupId;
  }

  /** The native consumer, whose group metadata a transaction's sendOffsets carries. */
  nativeClient(): NativeConsumer {
    return (this.consumer as unknown as { _getInternalClient(): NativeConsumer })._getInternalClient();
  }

  connect(): Promise<void> {
    this.nativeCalls.open();
    return this.mapped(this.consumer.connect());
  }

  async disconnect(): Promise<void> {
    clearInterval(this.positionTimer);
    await this.nativeCalls.disconnectWhenIdle(() => this.consumer.disconnect());
  }

  subscribe(topics: readonly string[]): Promise<void> {
    return this.mapped(this.consumer.subscribe({ topics: [...topics] }));
  }

  async run({ eachBatch, onPosition, onCrash }: ConsumerRunOptions): Promise<void> {
    const reported = new Map<string, bigint>();
    /** Past the last record handed to eachBatch, per partition (a batch handed over again does not move it). */
    const handedThrough = new Map<string, bigint>();
    /** Each partition's position at the last idle poll, and how far records had been handed over then. */
    const observed = new Map<string, { readonly offset: bigint; readonly handed: bigint | undefined }>();
    const report = (partitions: Array<{ topic: string; partition: number }>): void => {
      if (!onPosition || partitions.length === 0) return;
      let positions: ReturnType<NativeConsumer['position']>;
      try {
        positions = this.nativeClient().position(partitions);
      } catch {
        return; // not assigned any more, or disconnecting
      }
      for (const { topic, partition, offset } of positions) {
        if (!(offset >= 0)) continue;
        const key = partitionKey(topic, partition);
        const next = BigInt(offset);
        const before = observed.get(key);
        const handed = handedThrough.get(key);
        observed.set(key, { offset: next, handed });
        // A fetch moves the position on a libuv thread before its messages reach eachBatch on the main one: read
        // in between, the position runs ahead of records not handed over yet (a reader then stopped short of them).
        // Only a position read again a poll later, with no new record handed over in between, is past markers alone.
        if (before?.offset !== next || before.handed !== handed) continue;
        if (reported.get(key) === next) continue;
        reported.set(key, next);
        onPosition(topic, partition, next);
      }
    };
    // Transaction markers never reach eachBatch, yet move the position: polled, as no batch reports them.
    // The position counts what the client's KafkaJS layer has taken into its cache, which may be ahead of
    // what eachBatch was given; that cache is empty once the handler has been idle a whole poll interval.
    let inFlight = 0;
    let lastActivity = Date.now();
    if (onPosition) {
      this.positionTimer = setInterval(() => {
        if (inFlight === 0 && Date.now() - lastActivity >= POSITION_POLL_MS) report(this.consumer.assignment());
      }, POSITION_POLL_MS);
    }
    const running = this.mapped(
      this.consumer.run({
        eachBatchAutoResolve: false,
        eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
          inFlight++;
          lastActivity = Date.now();
          const last = batch.messages.at(-1);
          if (last) {
            const key = partitionKey(batch.topic, batch.partition);
            const through = BigInt(last.offset) + 1n;
            if (through > (handedThrough.get(key) ?? -1n)) handedThrough.set(key, through);
          }
          const messages: IncomingMessage[] = batch.messages.map((m) => ({
            key: m.key,
            value: m.value,
            offset: m.offset,
            timestamp: m.timestamp,
            headers: headerText(m.headers),
          }));
          try {
            await eachBatch({ batch: { topic: batch.topic, partition: batch.partition, messages }, resolveOffset, heartbeat, isActive: () => isRunning() && !isStale() });
          } finally {
            inFlight--;
            lastActivity = Date.now();
          }
        },
      }),
    );
    running.catch((error: unknown) => onCrash?.(error instanceof Error ? error : new Error(String(error))));
    await running;
  }

  seek(topic: string, partition: number, offset: string): void {
    this.consumer.seek({ topic, partition, offset });
  }

  commitOffsets(offsets: readonly TopicPartitionOffset[]): Promise<void> {
    return this.mapped(this.consumer.commitOffsets(offsets.map(({ topic, partition, offset, metadata }) => ({ topic, partition, offset, metadata: metadata ?? null }))));
  }
}
