import { Kafka, logLevel, type KafkaConfig, type LogEntry, type Transaction } from 'kafkajs';
import { ConfigError, ConnectionError } from '../../schemas/index.js';

/**
 * Everything outside this folder reaches Kafka through these functions and re-exported types, so the
 * client (kafkajs today; @confluentinc/kafka-javascript offers the same API shape) can be swapped here alone.
 */
export interface KafkaOptions {
  /** Bootstrap brokers. @default env KAFKA_BROKERS split on ',', else ['localhost:9092'] */
  brokers?: string[];
  /** Client id shown in broker logs and quotas. @default 'trialrun' */
  clientId?: string;
  /** Minimum client log level passed to `log`. @default 'warn' (env KAFKAJS_LOG_LEVEL) */
  logLevel?: KafkaLogLevel;
  /** Connection timeout in ms. @default 3000 */
  connectionTimeoutMs?: number;
  /** Where the client's log lines go. @default stderrKafkaLog: one plain line each on stderr */
  log?: KafkaLog;
}

export type KafkaLogLevel = 'nothing' | 'error' | 'warn' | 'info' | 'debug';

/** One log line of the Kafka client, as our logger receives it. */
export interface KafkaLogLine {
  readonly level: Exclude<KafkaLogLevel, 'nothing'>;
  /** The client component, e.g. `Connection`, `Consumer`. */
  readonly namespace: string;
  readonly message: string;
  /** The rest of the client's entry (broker, error, groupId, ...). */
  readonly fields: Readonly<Record<string, unknown>>;
}

export type KafkaLog = (line: KafkaLogLine) => void;

export interface ResolvedKafkaOptions {
  readonly brokers: readonly string[];
  /** Whether the brokers came from KAFKA_BROKERS (else options or the default), for error messages. */
  readonly brokersFrom: 'options' | 'KAFKA_BROKERS' | 'default';
  readonly clientId: string;
  readonly logLevel: KafkaLogLevel;
  readonly connectionTimeoutMs: number;
  readonly log: KafkaLog;
}

const LEVELS = { nothing: logLevel.NOTHING, error: logLevel.ERROR, warn: logLevel.WARN, info: logLevel.INFO, debug: logLevel.DEBUG };
const LEVEL_NAMES = new Map<number, KafkaLogLine['level']>([
  [logLevel.ERROR, 'error'],
  [logLevel.WARN, 'warn'],
  [logLevel.INFO, 'info'],
  [logLevel.DEBUG, 'debug'],
]);

/**
 * The default logger: `kafka warn [Connection] Connection error: ... (broker=localhost:9092)` on stderr.
 * The client's errors are logged at warn: what a command makes of them is reported once, by the command.
 */
export const stderrKafkaLog: KafkaLog = ({ level, namespace, message, fields }) => {
  const detail = Object.entries(fields)
    .filter(([, value]) => value !== undefined && value !== null && typeof value !== 'object')
    .map(([name, value]) => `${name}=${String(value)}`)
    .join(', ');
  process.stderr.write(`kafka ${level === 'error' ? 'warn' : level} [${namespace}] ${message}${detail ? ` (${detail})` : ''}\n`);
};

export function resolveKafkaOptions(options: KafkaOptions = {}, env: NodeJS.ProcessEnv = process.env): ResolvedKafkaOptions {
  const brokersFrom = options.brokers ? 'options' : env.KAFKA_BROKERS !== undefined ? 'KAFKA_BROKERS' : 'default';
  const brokers = options.brokers ?? (env.KAFKA_BROKERS ?? 'localhost:9092').split(',').map((b) => b.trim()).filter(Boolean);
  if (brokers.length === 0) throw new ConfigError(`${brokersFrom === 'KAFKA_BROKERS' ? 'KAFKA_BROKERS' : 'KafkaOptions.brokers'}: at least one broker address (host:port) is required`);
  const port = (broker: string): number => Number(broker.slice(broker.lastIndexOf(':') + 1));
  const malformed = brokers.filter((broker) => !(/^[^\s:]+:\d{1,5}$/.test(broker) || /^\[[0-9a-fA-F:]+\]:\d{1,5}$/.test(broker)) || port(broker) < 1 || port(broker) > 65535);
  if (malformed.length > 0) throw new ConfigError(`${brokersFrom === 'KAFKA_BROKERS' ? 'KAFKA_BROKERS' : 'KafkaOptions.brokers'}: "${malformed.join('", "')}" is not host:port`);
  const level = options.logLevel ?? (env.KAFKAJS_LOG_LEVEL as KafkaLogLevel | undefined) ?? 'warn';
  if (!Object.hasOwn(LEVELS, level)) throw new ConfigError(`KafkaOptions.logLevel (KAFKAJS_LOG_LEVEL): "${level}" is not one of ${Object.keys(LEVELS).join(', ')}`);
  const connectionTimeoutMs = options.connectionTimeoutMs ?? 3000;
  if (!Number.isInteger(connectionTimeoutMs) || connectionTimeoutMs < 1) throw new ConfigError(`KafkaOptions.connectionTimeoutMs must be a whole number >= 1, got ${connectionTimeoutMs}`);
  return { brokers, brokersFrom, clientId: options.clientId ?? 'trialrun', logLevel: level, connectionTimeoutMs, log: options.log ?? stderrKafkaLog };
}

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

export function createKafka(options: KafkaOptions = {}): Kafka {
  const resolved = resolveKafkaOptions(options);
  return new Kafka({
    clientId: resolved.clientId,
    brokers: [...resolved.brokers],
    connectionTimeout: resolved.connectionTimeoutMs,
    logLevel: LEVELS[resolved.logLevel],
    logCreator: kafkaLogCreator(resolved.log),
    // No client-wide retry override: kafkajs gives idempotent producers unlimited retries, which EOS needs.
  });
}

/** Where the brokers came from, for messages: `KAFKA_BROKERS=a:1,b:2`, or the default and how to change it. */
function brokersSource(resolved: ResolvedKafkaOptions): string {
  const list = resolved.brokers.join(',');
  if (resolved.brokersFrom === 'KAFKA_BROKERS') return `KAFKA_BROKERS=${list}`;
  if (resolved.brokersFrom === 'default') return `${list} (the default; set KAFKA_BROKERS to use another)`;
  return list;
}

const unreachable = (resolved: ResolvedKafkaOptions, reason: string, cause?: unknown): ConnectionError =>
  new ConnectionError(`cannot reach Kafka at ${brokersSource(resolved)}: ${reason}; start it with \`trialrun stack up\`, or point KAFKA_BROKERS at a running broker`, cause);

/**
 * Connects once to the brokers with a bounded timeout and no retries, and throws one ConnectionError
 * naming KAFKA_BROKERS and the address when none answers. A command calls it before its real work, so an
 * unreachable broker costs at most `connectionTimeoutMs` and one clear line, not the client's long retry
 * loop with a log line per attempt.
 */
export async function checkBrokers(options: KafkaOptions = {}): Promise<void> {
  const resolved = resolveKafkaOptions(options);
  const failure = await probeBrokers(resolved.brokers, { connectionTimeoutMs: resolved.connectionTimeoutMs, clientId: `${resolved.clientId}-probe` });
  if (failure !== null) throw unreachable(resolved, rootMessage(failure), failure);
}

/**
 * One quiet attempt, no retries and no client logging, to connect to `brokers` and read the cluster's
 * metadata and topic list within `timeoutMs`: null when they answer, else the error. A closed port answers
 * quickly; this is also the stack's health check for the broker it starts.
 */
export async function probeBrokers(
  brokers: readonly string[],
  options: { readonly connectionTimeoutMs?: number; readonly timeoutMs?: number; readonly clientId?: string } = {},
): Promise<Error | null> {
  const timeoutMs = options.timeoutMs ?? 3_000;
  const admin = new Kafka({
    clientId: options.clientId ?? 'trialrun-probe',
    brokers: [...brokers],
    connectionTimeout: options.connectionTimeoutMs ?? 1_000,
    requestTimeout: timeoutMs,
    // The first connection either answers or the caller decides; retrying it only delays the answer.
    retry: { retries: 0 },
    logLevel: logLevel.NOTHING,
  }).admin();
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    await Promise.race([admin.connect().then(async () => { await admin.describeCluster(); await admin.listTopics(); }), timeout]);
    return null;
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  } finally {
    clearTimeout(timer);
    await admin.disconnect().catch(() => undefined);
  }
}

/** The innermost message of a kafkajs error chain (retries wrap the connection error that caused them). */
function rootMessage(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error && current.cause instanceof Error; depth++) current = current.cause;
  return current instanceof Error ? current.message : String(current);
}

/**
 * A Kafka client failure to reach the brokers, anywhere in an error's chain, as one ConnectionError naming
 * KAFKA_BROKERS and the address; undefined for any other error. For a command's error boundary, when the
 * broker goes away after the first connection.
 */
export function asKafkaConnectionError(error: unknown, options: KafkaOptions = {}): ConnectionError | undefined {
  if (error instanceof ConnectionError) return error;
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++, current = current.cause) {
    // By name: kafkajs is CommonJS and does not export its error classes to ES modules.
    if (current.name === 'KafkaJSConnectionError') return unreachable(resolveKafkaOptions(options), current.message, error);
  }
  return undefined;
}

/**
 * Runs `work` in one Kafka transaction of a producer made for it: committed when `work` returns, aborted
 * when it throws (and the error rethrown). Readers with read_committed see all of it or nothing; a later
 * producer with the same transactional id fences one that died mid-way.
 */
export async function inTransaction<T>(
  kafka: Kafka,
  transactionalId: string,
  work: (transaction: Transaction) => Promise<T>,
  options: { /** The broker caps it at transaction.max.timeout.ms. @default 60000 (kafkajs) */ transactionTimeoutMs?: number } = {},
): Promise<T> {
  const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1, transactionTimeout: options.transactionTimeoutMs });
  await producer.connect();
  try {
    // Beginning the transaction initialises the producer id, which fences a previous holder of the id.
    const transaction = await producer.transaction();
    try {
      const result = await work(transaction);
      await transaction.commit();
      return result;
    } catch (error) {
      await transaction.abort().catch(() => undefined);
      throw error;
    }
  } finally {
    await producer.disconnect();
  }
}

export type {
  Admin,
  Consumer,
  EachBatchPayload,
  IHeaders,
  Kafka,
  KafkaMessage,
  Message,
  Producer,
  RecordMetadata,
  Transaction,
} from 'kafkajs';
