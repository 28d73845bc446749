import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mapLimit, Semaphore } from './concurrency.js';
import { ShutdownError } from './errors.js';

test('at most limit holders, served first come first served, and a permit passes straight to the next waiter', async () => {
  const gate = new Semaphore(2);
  const order: string[] = [];
  const first = await gate.acquire();
  const second = await gate.acquire();
  assert.equal(gate.available, 0);
  const third = gate.acquire().then((release) => (order.push('third'), release));
  const fourth = gate.acquire().then((release) => (order.push('fourth'), release));
  assert.equal(gate.waiting, 2);
  first();
  first(); // twice is harmless
  const releaseThird = await third;
  assert.deepEqual(order, ['third']);
  assert.equal(gate.available, 0);
  second();
  (await fourth)();
  releaseThird();
  assert.equal(gate.available, 2);
});

test('a waiter whose signal aborts leaves the queue with a ShutdownError', async () => {
  const gate = new Semaphore(1);
  const held = await gate.acquire();
  const stop = new AbortController();
  const waiting = gate.acquire(stop.signal);
  stop.abort();
  await assert.rejects(waiting, ShutdownError);
  assert.equal(gate.waiting, 0);
  held();
  assert.equal(gate.available, 1);
  await assert.rejects(gate.acquire(stop.signal), ShutdownError);
});

test('mapLimit keeps order and never runs more than its limit', async () => {
  let running = 0;
  let peak = 0;
  const results = await mapLimit([5, 1, 4, 2, 3], 2, async (ms, index) => {
    running++;
    peak = Math.max(peak, running);
    await new Promise((resolve) => setTimeout(resolve, ms));
    running--;
    return index * 10;
  });
  assert.deepEqual(results, [0, 10, 20, 30, 40]);
  assert.equal(peak, 2);
  assert.throws(() => new Semaphore(0), /at least 1/);
});

test('mapLimit rejects with the first failure and starts no call after it', async () => {
  const started: number[] = [];
  const failure = new Error('item 1 failed');
  await assert.rejects(
    mapLimit([0, 1, 2, 3, 4, 5], 2, async (item) => {
      started.push(item);
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (item === 1) throw failure;
      if (item === 2) throw new Error('item 2 failed later');
      return item;
    }),
    (error) => error === failure,
  );
  // 0 and 1 ran together; 1's failure came as 0 ended, so 0's lane took 2 and nothing more started.
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(started, [0, 1, 2]);
});

test('mapLimit over many more items than its limit warns of no listener leak', async () => {
  const warnings: string[] = [];
  const onWarning = (warning: Error): void => void warnings.push(warning.name);
  process.on('warning', onWarning);
  try {
    const doubled = await mapLimit(Array.from({ length: 100 }, (_, i) => i), 4, async (item) => item * 2);
    assert.equal(doubled[99], 198);
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', onWarning);
  }
  assert.deepEqual(warnings.filter((name) => name === 'MaxListenersExceededWarning'), []);
});
