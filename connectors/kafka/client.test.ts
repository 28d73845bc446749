import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, ConnectionError, isRetriable, KafkaError, RecordTooLargeError } from '../../schemas/index.js';
import { logLevel } from 'kafkajs';
import { asKafkaConnectionError } from './client.js';
import { fromConfluentError, rebalanceListener, rebalanceTimeoutFor } from './confluent/index.js';
import { fromKafkajsError, kafkaLogCreator } from './kafkajs/index.js';
import { resolveKafkaOptions, stderrKafkaLog, type KafkaLogLine } from './options.js';

test('broker addresses come from KAFKA_BROKERS and must be host:port', () => {
  assert.deepEqual(resolveKafkaOptions({}, { KAFKA_BROKERS: 'a:1, b:2' }).brokers, ['a:1', 'b:2']);
  assert.equal(resolveKafkaOptions({}, {}).brokersFrom, 'default');
  assert.throws(() => resolveKafkaOptions({}, { KAFKA_BROKERS: 'nonsense' }), (error: unknown) => error instanceof ConfigError && error.message === 'KAFKA_BROKERS: "nonsense" is not host:port');
  assert.throws(() => resolveKafkaOptions({}, { KAFKA_BROKERS: 'localhost:99999' }), /"localhost:99999" is not host:port/);
  assert.throws(() => resolveKafkaOptions({}, { KAFKA_BROKERS: ' , ' }), /KAFKA_BROKERS: at least one broker address/);
  assert.throws(() => resolveKafkaOptions({}, { KAFKAJS_LOG_LEVEL: 'loud' }), /KAFKAJS_LOG_LEVEL/);
  assert.throws(() => resolveKafkaOptions({}, { KAFKAJS_LOG_LEVEL: 'constructor' }), /"constructor" is not one of/, 'inherited names are not levels');
});

test('a client connection failure anywhere in an error chain becomes one message naming KAFKA_BROKERS', () => {
  // kafkajs wraps the connection error in its retry error; both are matched by name (it exports no classes to ES modules).
  const connection = Object.assign(new Error('Connection error: connect ECONNREFUSED 127.0.0.1:9'), { name: 'KafkaJSConnectionError' });
  const retries = Object.assign(new Error('Connection error: connect ECONNREFUSED 127.0.0.1:9', { cause: connection }), { name: 'KafkaJSNumberOfRetriesExceeded' });
  const previous = process.env.KAFKA_BROKERS;
  process.env.KAFKA_BROKERS = '127.0.0.1:9';
  try {
    const converted = asKafkaConnectionError(retries);
    assert.ok(converted instanceof ConnectionError);
    assert.match(converted.message, /^cannot reach Kafka at KAFKA_BROKERS=127\.0\.0\.1:9: Connection error: connect ECONNREFUSED 127\.0\.0\.1:9; start it with `trialrun stack up`/);
    assert.equal(asKafkaConnectionError(new Error('Binder Error: nope')), undefined);
  } finally {
    if (previous === undefined) delete process.env.KAFKA_BROKERS;
    else process.env.KAFKA_BROKERS = previous;
  }
});

test("the client's log entries reach our logger as fields, and print as one plain line at warn, not JSON", () => {
  const lines: KafkaLogLine[] = [];
  const logger = kafkaLogCreator((line) => void lines.push(line))(logLevel.WARN);
  const entry = (level: logLevel, message: string) => ({ namespace: 'Connection', level, label: 'ERROR', log: { message, timestamp: 't', logger: 'kafkajs', broker: '127.0.0.1:9', retryCount: 2 } });
  logger(entry(logLevel.ERROR, 'Connection error: connect ECONNREFUSED 127.0.0.1:9'));
  logger(entry(logLevel.WARN, 'KafkaJS v2.0.0 switched default partitioner.'));
  assert.deepEqual(lines, [{ level: 'error', namespace: 'Connection', message: 'Connection error: connect ECONNREFUSED 127.0.0.1:9', fields: { broker: '127.0.0.1:9', retryCount: 2 } }], 'routine chatter is muted');

  const written: string[] = [];
  const write = process.stderr.write;
  process.stderr.write = ((chunk: string) => written.push(String(chunk)) > 0) as typeof process.stderr.write;
  try {
    stderrKafkaLog(lines[0]!);
  } finally {
    process.stderr.write = write;
  }
  assert.deepEqual(written, ['kafka warn [Connection] Connection error: connect ECONNREFUSED 127.0.0.1:9 (broker=127.0.0.1:9, retryCount=2)\n']);
});

test('the client comes from KafkaOptions.client, else TRIALRUN_KAFKA_CLIENT, else the default, and a wrong name is refused early', () => {
  assert.equal(resolveKafkaOptions({}, {}).client, 'confluent');
  assert.equal(resolveKafkaOptions({}, { TRIALRUN_KAFKA_CLIENT: 'kafkajs' }).client, 'kafkajs');
  assert.equal(resolveKafkaOptions({ client: 'confluent' }, { TRIALRUN_KAFKA_CLIENT: 'kafkajs' }).client, 'confluent');
  assert.throws(() => resolveKafkaOptions({}, { TRIALRUN_KAFKA_CLIENT: 'rdkafka' }), (error: unknown) => error instanceof ConfigError && /^TRIALRUN_KAFKA_CLIENT: "rdkafka" is not one of kafkajs, confluent$/.test(error.message));
  assert.throws(() => resolveKafkaOptions({ client: 'java' as never }, {}), /KafkaOptions\.client: "java" is not one of/);
});

const resolved = resolveKafkaOptions({ brokers: ['127.0.0.1:9'] }, {});
const clientError = (fields: { name?: string; message: string; code?: number; type?: string; retriable?: boolean; fatal?: boolean }): Error =>
  Object.assign(new Error(fields.message), { name: fields.name ?? 'KafkaJSError', ...fields });

test("each client's errors map to ours: unreachable brokers are a ConnectionError, the rest a KafkaError with the client's retriable verdict", () => {
  // confluent (librdkafka codes)
  const down = fromConfluentError(clientError({ message: 'Local: All broker connections are down', code: -187, retriable: true }), resolved);
  assert.ok(down instanceof ConnectionError && down.retriable && /cannot reach Kafka at 127\.0\.0\.1:9/.test(down.message));
  const rebalancing = fromConfluentError(clientError({ message: 'Broker: Group rebalance in progress', code: 27, retriable: true }), resolved);
  assert.ok(rebalancing instanceof KafkaError && rebalancing.retriable && rebalancing.code === '27');
  const loading = fromConfluentError(clientError({ message: 'Failed to initialize Producer ID: Broker: Coordinator load in progress', code: 14, retriable: false }), resolved);
  assert.ok(loading instanceof KafkaError && loading.retriable, 'a coordinator still loading after a broker restart is retriable, whatever the flag says');
  const fenced = fromConfluentError(clientError({ message: 'Broker: Producer fenced', code: 90, retriable: true }), resolved);
  assert.ok(fenced instanceof KafkaError && !fenced.retriable, 'a fenced producer stays fenced');
  const fatal = fromConfluentError(clientError({ message: 'Local: Fatal error', code: -150, retriable: true, fatal: true }), resolved);
  assert.ok(fatal instanceof KafkaError && !fatal.retriable);
  const missing = fromConfluentError(clientError({ message: 'Broker: Unknown topic or partition', code: 3, retriable: true }), resolved);
  assert.ok(missing instanceof KafkaError && !missing.retriable);
  // kafkajs (error names and types)
  const refused = fromKafkajsError(clientError({ name: 'KafkaJSConnectionError', message: 'Connection error: connect ECONNREFUSED 127.0.0.1:9', retriable: true }), resolved);
  assert.ok(refused instanceof ConnectionError);
  const moving = fromKafkajsError(clientError({ name: 'KafkaJSProtocolError', message: 'This is not the correct coordinator', type: 'NOT_COORDINATOR', retriable: true }), resolved);
  assert.ok(moving instanceof KafkaError && moving.retriable && moving.code === 'NOT_COORDINATOR');
  const epoch = fromKafkajsError(clientError({ name: 'KafkaJSProtocolError', message: 'Producer attempted an operation with an old epoch', type: 'INVALID_PRODUCER_EPOCH', retriable: false }), resolved);
  assert.ok(epoch instanceof KafkaError && !epoch.retriable);
  // A leader fail-over: the broker's "does not host this topic-partition", after kafkajs spent its own retries on it.
  const failover = clientError({ name: 'KafkaJSProtocolError', message: 'This server does not host this topic-partition', type: 'UNKNOWN_TOPIC_OR_PARTITION', retriable: true });
  const spent = fromKafkajsError(Object.assign(clientError({ name: 'KafkaJSNumberOfRetriesExceeded', message: failover.message, retriable: false }), { cause: failover }), resolved);
  assert.ok(spent instanceof KafkaError && spent.retriable && spent.code === 'UNKNOWN_TOPIC_OR_PARTITION', 'retriable with our bounded retry');
  const unwrapped = fromKafkajsError(clientError({ name: 'KafkaJSProtocolError', message: failover.message, type: 'UNKNOWN_TOPIC_OR_PARTITION', retriable: false }), resolved);
  assert.ok(unwrapped instanceof KafkaError && unwrapped.retriable);
  const fencedAfterRetries = fromKafkajsError(Object.assign(clientError({ name: 'KafkaJSNonRetriableError', message: 'old epoch', retriable: false }), { cause: clientError({ name: 'KafkaJSProtocolError', message: 'old epoch', type: 'INVALID_PRODUCER_EPOCH', retriable: false }) }), resolved);
  assert.ok(fencedAfterRetries instanceof KafkaError && !fencedAfterRetries.retriable && fencedAfterRetries.code === 'INVALID_PRODUCER_EPOCH');
  // Not a client error: unchanged, so a handler's own error keeps its class.
  const own = new TypeError('x is not a function');
  assert.equal(fromConfluentError(own, resolved), own);
  assert.equal(fromKafkajsError(own, resolved), own);
});

test("the confluent client's rebalance steps are reported as whole assignments, eager and cooperative alike, never the empty set between", () => {
  const reports: string[][] = [];
  const listener = rebalanceListener((assignment) => void reports.push(assignment.map((p) => `${p.topic}/${p.partition}`).sort()));
  const ASSIGN = { code: -175 };
  const REVOKE = { code: -174 };
  listener(ASSIGN, [{ topic: 't', partition: 0 }, { topic: 't', partition: 1 }]);
  // eager: everything revoked, then the new set assigned
  listener(REVOKE, [{ topic: 't', partition: 0 }, { topic: 't', partition: 1 }]);
  listener(ASSIGN, [{ topic: 't', partition: 1 }]);
  // cooperative: only what moves
  listener(ASSIGN, [{ topic: 't', partition: 2 }]);
  listener(REVOKE, [{ topic: 't', partition: 1 }]);
  listener(ASSIGN, []);
  assert.deepEqual(reports, [['t/0', 't/1'], ['t/1'], ['t/1', 't/2'], ['t/2']]);
});

test("the confluent client's time between polls stays within what librdkafka accepts, after the kafkaJS layer doubles it", () => {
  assert.equal(rebalanceTimeoutFor(300_000), 300_000);
  // A rollout worker of 8 llm episodes of 10 minutes, with retries, asks for about 14 h: librdkafka would get 29 h and refuse.
  assert.equal(rebalanceTimeoutFor(51_975_000), 43_200_000);
  assert.ok(2 * rebalanceTimeoutFor(Number.MAX_SAFE_INTEGER) <= 86_400_000);
});

test("a record refused as too large is a RecordTooLargeError, never retried, from either client and however kafkajs wrapped it", () => {
  const local = fromConfluentError(clientError({ message: 'Broker: Message size too large', code: 10, retriable: false }), resolved);
  assert.ok(local instanceof RecordTooLargeError && !isRetriable(local) && /Message size too large/.test(local.message));
  const list = fromConfluentError(clientError({ message: 'Broker: Message batch larger than configured server segment size', code: 18, retriable: true }), resolved);
  assert.ok(list instanceof RecordTooLargeError && !isRetriable(list));
  const broker = clientError({ name: 'KafkaJSProtocolError', message: 'The request included a message larger than the max message size the server will accept', type: 'MESSAGE_TOO_LARGE', retriable: false });
  const direct = fromKafkajsError(broker, resolved);
  assert.ok(direct instanceof RecordTooLargeError && !isRetriable(direct));
  const wrapped = fromKafkajsError(Object.assign(clientError({ name: 'KafkaJSNonRetriableError', message: broker.message, retriable: false }), { cause: broker }), resolved);
  assert.ok(wrapped instanceof RecordTooLargeError && !isRetriable(wrapped));
});
