import { ConfigError, wholeNumber } from '../../schemas/index.js';
import type { KafkaClientName } from './port.js';

export interface KafkaOptions {
  /**
   * Which client implements the port. 'confluent' (librdkafka) commits transactional offsets with the
   * consumer's group generation (KIP-447), so every processor may run as many instances; see docs/kafka.md
   * for the measurement behind the default. @default env TRIALRUN_KAFKA_CLIENT, else 'confluent'
   */
  client?: KafkaClientName;
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
  readonly client: KafkaClientName;
  readonly brokers: readonly string[];
  /** Whether the brokers came from KAFKA_BROKERS (else options or the default), for error messages. */
  readonly brokersFrom: 'options' | 'KAFKA_BROKERS' | 'default';
  readonly clientId: string;
  readonly logLevel: KafkaLogLevel;
  readonly connectionTimeoutMs: number;
  readonly log: KafkaLog;
}

export const KAFKA_CLIENTS: readonly KafkaClientName[] = ['kafkajs', 'confluent'];
export const DEFAULT_KAFKA_CLIENT: KafkaClientName = 'confluent';
export const KAFKA_LOG_LEVELS: readonly KafkaLogLevel[] = ['nothing', 'error', 'warn', 'info', 'debug'];

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
  const client = options.client ?? (env.TRIALRUN_KAFKA_CLIENT as KafkaClientName | undefined) ?? DEFAULT_KAFKA_CLIENT;
  if (!KAFKA_CLIENTS.includes(client)) {
    throw new ConfigError(`${options.client !== undefined ? 'KafkaOptions.client' : 'TRIALRUN_KAFKA_CLIENT'}: "${client}" is not one of ${KAFKA_CLIENTS.join(', ')}`);
  }
  const brokersFrom = options.brokers ? 'options' : env.KAFKA_BROKERS !== undefined ? 'KAFKA_BROKERS' : 'default';
  const brokers = options.brokers ?? (env.KAFKA_BROKERS ?? 'localhost:9092').split(',').map((b) => b.trim()).filter(Boolean);
  if (brokers.length === 0) throw new ConfigError(`${brokersFrom === 'KAFKA_BROKERS' ? 'KAFKA_BROKERS' : 'KafkaOptions.brokers'}: at least one broker address (host:port) is required`);
  const port = (broker: string): number => Number(broker.slice(broker.lastIndexOf(':') + 1));
  const malformed = brokers.filter((broker) => !(/^[^\s:]+:\d{1,5}$/.test(broker) || /^\[[0-9a-fA-F:]+\]:\d{1,5}$/.test(broker)) || port(broker) < 1 || port(broker) > 65535);
  if (malformed.length > 0) throw new ConfigError(`${brokersFrom === 'KAFKA_BROKERS' ? 'KAFKA_BROKERS' : 'KafkaOptions.brokers'}: "${malformed.join('", "')}" is not host:port`);
  const level = options.logLevel ?? (env.KAFKAJS_LOG_LEVEL as KafkaLogLevel | undefined) ?? 'warn';
  if (!KAFKA_LOG_LEVELS.includes(level)) throw new ConfigError(`KafkaOptions.logLevel (KAFKAJS_LOG_LEVEL): "${level}" is not one of ${KAFKA_LOG_LEVELS.join(', ')}`);
  const connectionTimeoutMs = options.connectionTimeoutMs ?? 3000;
  wholeNumber('KafkaOptions.connectionTimeoutMs', connectionTimeoutMs, { min: 1 });
  return { client, brokers, brokersFrom, clientId: options.clientId ?? 'trialrun', logLevel: level, connectionTimeoutMs, log: options.log ?? stderrKafkaLog };
}

/** Where the brokers came from, for messages: `KAFKA_BROKERS=a:1,b:2`, or the default and how to change it. */
export function brokersSource(resolved: ResolvedKafkaOptions): string {
  const list = resolved.brokers.join(',');
  if (resolved.brokersFrom === 'KAFKA_BROKERS') return `KAFKA_BROKERS=${list}`;
  if (resolved.brokersFrom === 'default') return `${list} (the default; set KAFKA_BROKERS to use another)`;
  return list;
}
