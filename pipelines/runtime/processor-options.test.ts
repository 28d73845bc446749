import assert from 'node:assert/strict';
import { test } from 'node:test';
import { resolveProcessorOptions } from './processor.js';

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
});

test('bad processor options are refused when resolved, naming the option', () => {
  assert.throws(() => resolveProcessorOptions({ ...base, name: 'Learner' }), /name "Learner" must be kebab-case/);
  assert.throws(() => resolveProcessorOptions({ ...base, inputs: [] }), /at least one input topic/);
  assert.throws(() => resolveProcessorOptions({ ...base, maxRecordsPerTransaction: 0 }), /maxRecordsPerTransaction of learner/);
  assert.throws(() => resolveProcessorOptions({ ...base, sessionTimeoutMs: 2.5 }), /sessionTimeoutMs of learner must be a whole number/);
  assert.throws(() => resolveProcessorOptions({ ...base, priority: () => 0 }), /priority order needs maxRecordsPerTransaction 1/);
  assert.throws(() => resolveProcessorOptions({ ...base, instanceId: '1', stores: [{} as never] }), /single instance/);
});
