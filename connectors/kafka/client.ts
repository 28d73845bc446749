import { Kafka, logLevel } from 'kafkajs';
import { ConnectionError } from '../../schemas/index.js';
import { confluentPort, fromConfluentError } from './confluent/index.js';
import { fromKafkajsError, kafkajsPort, unreachable } from './kafkajs/index.js';
import { resolveKafkaOptions, type KafkaOptions } from './options.js';
import type { KafkaPort, KafkaTransaction, ProducerOptions } from './port.js';

/**
 * The client behind the port, as KafkaOptions.client (or TRIALRUN_KAFKA_CLIENT) says; resolved and checked
 * here, once, so a wrong name or a missing native build is one ConfigError before anything connects.
 */
export function createKafka(options: KafkaOptions = {}): KafkaPort {
  const resolved = resolveKafkaOptions(options);
  return resolved.client === 'confluent' ? confluentPort(resolved) : kafkajsPort(resolved);
}

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
 * quickly; this is also the stack's health check for the broker it starts. kafkajs whatever the client:
 * it fails fast on a closed port, where librdkafka keeps reconnecting in the background.
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

/** The innermost message of an error chain (retries wrap the connection error that caused them). */
function rootMessage(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error && current.cause instanceof Error; depth++) current = current.cause;
  return current instanceof Error ? current.message : String(current);
}

/**
 * A Kafka client failure to reach the brokers, anywhere in an error's chain and from either client, as one
 * ConnectionError naming KAFKA_BROKERS and the address; undefined for any other error. For a command's error
 * boundary, when the broker goes away after the first connection.
 */
export function asKafkaConnectionError(error: unknown, options: KafkaOptions = {}): ConnectionError | undefined {
  if (error instanceof ConnectionError) return error;
  const resolved = resolveKafkaOptions(options);
  for (let current: unknown = error, depth = 0; depth < 5 && current instanceof Error; depth++, current = current.cause) {
    for (const mapped of [fromKafkajsError(current, resolved), fromConfluentError(current, resolved)]) {
      if (mapped instanceof ConnectionError) return mapped;
    }
  }
  return undefined;
}

/**
 * Runs `work` in one Kafka transaction of a producer made for it: committed when `work` returns, aborted
 * when it throws (and the error rethrown). Readers with read_committed see all of it or nothing; a later
 * producer with the same transactional id fences one that died mid-way.
 */
export async function inTransaction<T>(
  kafka: KafkaPort,
  transactionalId: string,
  work: (transaction: KafkaTransaction) => Promise<T>,
  options: Pick<ProducerOptions, 'transactionTimeoutMs'> = {},
): Promise<T> {
  const producer = kafka.producer({ transactionalId, transactionTimeoutMs: options.transactionTimeoutMs });
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
