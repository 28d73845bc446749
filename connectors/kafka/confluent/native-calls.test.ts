import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KafkaError, isRetriable } from '../../../schemas/index.js';
import { NativeCalls } from './index.js';

test('a client is disconnected only once its native calls have returned', async () => {
  const calls = new NativeCalls('test producer');
  let finish!: () => void;
  const running = calls.run(() => new Promise<void>((resolve) => (finish = resolve)));
  const order: string[] = [] as string[];
  const disconnecting = calls.disconnectWhenIdle(async () => void order.push('disconnect'));
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(order.length, 0, 'not while the call runs');
  order.push('call returned');
  finish();
  await running;
  assert.equal(await disconnecting, true);
  assert.deepEqual(order, ['call returned', 'disconnect']);
  assert.equal(calls.inFlight, 0);
});

test('once a disconnect is asked for, a call that would start is refused (retriable), even in the same tick as the last call returns', async () => {
  const calls = new NativeCalls('test producer');
  let finish!: () => void;
  const started: string[] = [];
  // What a transaction does: its send of offsets returns, and its commit follows at once.
  const offsets = calls.run(() => new Promise<void>((resolve) => (finish = resolve)));
  const commit = offsets.then(() => calls.run(async () => void started.push('commit')));
  const disconnecting = calls.disconnectWhenIdle(async () => void started.push('disconnect'));
  finish();
  await assert.rejects(commit, (error: unknown) => error instanceof KafkaError && error.code === 'CLIENT_CLOSING' && isRetriable(error));
  assert.equal(await disconnecting, true);
  assert.deepEqual(started, ['disconnect'], 'the commit never started beside the disconnect');
  calls.open();
  await calls.run(async () => void started.push('after reconnect'));
  assert.deepEqual(started, ['disconnect', 'after reconnect']);
});

test('a native call that outlasts the wait: the disconnect returns, and the handle is destroyed when the call returns, never under it; a failed call counts as returned', async () => {
  const calls = new NativeCalls('test consumer');
  let finish!: () => void;
  const running = calls.run(() => new Promise<void>((resolve) => (finish = resolve)));
  let disconnected = false;
  assert.equal(await calls.disconnectWhenIdle(async () => void (disconnected = true), 30), false);
  assert.equal(disconnected, false, 'not under the running call');
  finish();
  await running;
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(disconnected, true, 'destroyed once it returned');
  disconnected = false;
  const failing = new NativeCalls('test producer');
  await failing.run(() => Promise.reject(new Error('timed out'))).catch(() => undefined);
  await failing.run(() => {
    throw new Error('thrown before a promise');
  }).catch(() => undefined);
  assert.equal(failing.inFlight, 0);
  assert.equal(await failing.disconnectWhenIdle(async () => void (disconnected = true), 30), true);
  assert.equal(disconnected, true);
});
