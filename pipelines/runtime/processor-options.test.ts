import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KafkaPort } from '../../connectors/kafka/index.js';
import type { TopicSerde } from '../../connectors/registry/index.js';
import { ConfigError, topicNames } from '../../schemas/index.js';
import { resolveProcessorOptions, StreamProcessor } from './processor.js';
import { StateStore } from './state-store.js';

const base = { name: 'learner', inputs: ['rewards'] as const };

test('processor options resolve to their documented defaults, explicitly undefined ones included', () => {
  const resolved = resolveProcessorOptions({ ...base, accept: undefined, sessionTimeoutMs: undefined });
  assert.equal(resolved.instanceId, '0');
  assert.equal(resolved.maxRecordsPerTransaction, 20);
  assert.equal(resolved.timeoutMs, 120_000);
  assert.equal(resolved.sessionTimeoutMs, 45_000);
  assert.equal(resolved.accept, null);
  assert.equal(resolved.priority, null);
  assert.equal(resolveProcessorOptions({ ...base, sessionTimeoutMs: 10_000 }).sessionTimeoutMs, 10_000);
  assert.equal(resolved.hostAvailable, null);
  assert.deepEqual(resolved.hostProbe, { retries: 720, initialDelayMs: 1000, maxDelayMs: 5000, factor: 2 });
  assert.deepEqual(resolveProcessorOptions({ ...base, hostAvailable: undefined, hostProbe: { retries: 3 } }).hostProbe, { retries: 3, initialDelayMs: 1000, maxDelayMs: 5000, factor: 2 });
});

test('bad processor options are refused when resolved, naming the option', () => {
  assert.throws(() => resolveProcessorOptions({ ...base, name: 'Learner' }), /name "Learner" must be kebab-case/);
  assert.throws(() => resolveProcessorOptions({ ...base, inputs: [] }), /at least one input topic/);
  assert.throws(() => resolveProcessorOptions({ ...base, maxRecordsPerTransaction: 0 }), (error: unknown) => error instanceof ConfigError && /^ProcessorOptions.maxRecordsPerTransaction of learner must be a whole number >= 1, got 0$/.test(error.message));
  assert.throws(() => resolveProcessorOptions({ ...base, sessionTimeoutMs: 2.5 }), /sessionTimeoutMs of learner must be a whole number/);
  assert.throws(() => resolveProcessorOptions({ ...base, priority: () => 0 }), /priority order needs maxRecordsPerTransaction 1/);
  for (const bad of [{ name: 'Learner' }, { inputs: [] }, { yieldBatchAfterMs: -1 }, { priority: () => 0 }]) {
    assert.throws(() => resolveProcessorOptions({ ...base, ...bad }), ConfigError, JSON.stringify(bad));
  }
  assert.equal(resolveProcessorOptions({ ...base, yieldBatchAfterMs: Number.POSITIVE_INFINITY }).yieldBatchAfterMs, Number.POSITIVE_INFINITY);
  assert.throws(() => resolveProcessorOptions({ ...base, hostProbe: { initialDelayMs: 10_000 } }), /ProcessorOptions.hostProbe of learner: RetryOptions.maxDelayMs must be a number >= 10000, got 5000/);
});

test('with kafkajs, which fences by transactional id only, a stateful processor runs as instance 0 alone; refused before connecting', async () => {
  const kafka = { client: 'kafkajs', admin: () => assert.fail('nothing connects') } as unknown as KafkaPort;
  const names = topicNames('unit.');
  const store = new StateStore('s', names.changelog('learner', 's'));
  const processor = new StreamProcessor({ kafka, serde: {} as TopicSerde, names }, { ...base, instanceId: '1', stores: [store as StateStore<unknown>] }, async () => []);
  await assert.rejects(processor.start(), (error: unknown) => error instanceof ConfigError && /learner has state stores: with the kafkajs client it runs as the single instance '0'/.test(error.message));
});
