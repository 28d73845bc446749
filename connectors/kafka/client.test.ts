import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, ConnectionError } from '../../schemas/index.js';
import { logLevel } from 'kafkajs';
import { asKafkaConnectionError, kafkaLogCreator, resolveKafkaOptions, stderrKafkaLog, type KafkaLogLine } from './client.js';

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
