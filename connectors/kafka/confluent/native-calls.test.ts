import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NativeCalls } from './index.js';

test('a client is disconnected only once its native calls have returned', async () => {
  const calls = new NativeCalls('test producer');
  let finish!: () => void;
  const running = calls.track(new Promise<void>((resolve) => (finish = resolve)));
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

test('a native call that never returns leaves the handle open (never freed under it), and a failed call counts as returned', async () => {
  const calls = new NativeCalls('test consumer');
  void calls.track(new Promise<void>(() => undefined));
  let disconnected = false;
  assert.equal(await calls.disconnectWhenIdle(async () => void (disconnected = true), 30), false);
  assert.equal(disconnected, false);
  const failing = new NativeCalls('test producer');
  await failing.track(Promise.reject(new Error('timed out'))).catch(() => undefined);
  assert.equal(await failing.disconnectWhenIdle(async () => void (disconnected = true), 30), true);
  assert.equal(disconnected, true);
});
