import { Kafka, logLevel, type KafkaConfig, type LogEntry, type Transaction } from 'kafkajs';

/**
 * Everything outside this folder reaches Kafka through these functions and re-exported types, so the
 * client (kafkajs today; @confluentinc/kafka-javascript offers the same API shape) can be swapped here alone.
 */
export interface KafkaOptions {
  /** Bootstrap brokers. @default env KAFKA_BROKERS split on ',', else ['localhost:9092'] */
  brokers?: string[];
  /** Client id shown in broker logs and quotas. @default 'trialrun' */
  clientId?: string;
  /** Minimum kafkajs log level printed to stderr. @default 'warn' (env KAFKAJS_LOG_LEVEL) */
  logLevel?: 'nothing' | 'error' | 'warn' | 'info' | 'debug';
  /** Connection timeout in ms. @default 3000 */
  connectionTimeoutMs?: number;
}

export interface ResolvedKafkaOptions {
  readonly brokers: readonly string[];
  readonly clientId: string;
  readonly logLevel: NonNullable<KafkaOptions['logLevel']>;
  readonly connectionTimeoutMs: number;
}

const LEVELS = { nothing: logLevel.NOTHING, error: logLevel.ERROR, warn: logLevel.WARN, info: logLevel.INFO, debug: logLevel.DEBUG };

export function resolveKafkaOptions(options: KafkaOptions = {}, env: NodeJS.ProcessEnv = process.env): ResolvedKafkaOptions {
  const brokers = options.brokers ?? (env.KAFKA_BROKERS ?? 'localhost:9092').split(',').map((b) => b.trim()).filter(Boolean);
  if (brokers.length === 0) throw new Error('KafkaOptions.brokers: at least one broker address is required');
  const level = options.logLevel ?? (env.KAFKAJS_LOG_LEVEL as KafkaOptions['logLevel']) ?? 'warn';
  if (!(level in LEVELS)) throw new Error(`KafkaOptions.logLevel: "${level}" is not one of ${Object.keys(LEVELS).join(', ')}`);
  return {
    brokers,
    clientId: options.clientId ?? 'trialrun',
    logLevel: level,
    connectionTimeoutMs: options.connectionTimeoutMs ?? 3000,
  };
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

function logCreator(): NonNullable<KafkaConfig['logCreator']> {
  return () => ({ namespace, level, log }: LogEntry) => {
    const { message = '', timestamp: _t, logger: _l, ...rest } = log;
    const line = `${String(message)} ${JSON.stringify(rest)}`;
    if (MUTED.some((pattern) => pattern.test(line))) return;
    process.stderr.write(`[kafkajs ${namespace} ${logLevel[level]}] ${line}\n`);
  };
}

export function createKafka(options: KafkaOptions = {}): Kafka {
  const resolved = resolveKafkaOptions(options);
  return new Kafka({
    clientId: resolved.clientId,
    brokers: [...resolved.brokers],
    connectionTimeout: resolved.connectionTimeoutMs,
    logLevel: LEVELS[resolved.logLevel],
    logCreator: logCreator(),
    // No client-wide retry override: kafkajs gives idempotent producers unlimited retries, which EOS needs.
  });
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
