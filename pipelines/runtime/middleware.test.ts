import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, ConnectionError, ShutdownError, TimeoutError } from '../../schemas/index.js';
import { attemptsOf, backoffDelay, resolveRetryOptions } from '../../schemas/index.js';
import { retry } from './retry.js';
import { timeout } from './timeout.js';
import { compose, type RawHandler, type RawRecord } from './types.js';

const record: RawRecord = { topic: 't', topicKey: 'tasks', partition: 0, offset: '7', key: null, value: null, headers: {}, timestamp: '0' };
const payload = () => ({ record, signal: new AbortController().signal });
const fast = { retries: 3, initialDelayMs: 1, maxDelayMs: 2 };

test('retriable errors are retried until they succeed', async () => {
  let calls = 0;
  const handler: RawHandler = async () => {
    if (++calls < 3) throw new ConnectionError('broker away');
    return [{ topic: 'out', key: 'k', value: null }];
  };
  assert.equal((await retry(fast)(handler)(payload())).length, 1);
  assert.equal(calls, 3);
});

test('non-retriable errors fail at once, and the attempt count travels with the error', async () => {
  let calls = 0;
  const failing: RawHandler = async () => {
    calls++;
    throw new ConfigError('bad');
  };
  await assert.rejects(retry(fast)(failing)(payload()), (error) => attemptsOf(error) === 1);
  assert.equal(calls, 1);
  const flaky: RawHandler = async () => {
    throw new ConnectionError('down');
  };
  await assert.rejects(retry(fast)(flaky)(payload()), (error) => attemptsOf(error) === 4);
});

test('backoff grows, is jittered, and is capped', () => {
  const options = resolveRetryOptions({ initialDelayMs: 100, maxDelayMs: 1000, factor: 2 });
  assert.equal(backoffDelay(options, 0, () => 1), 100);
  assert.equal(backoffDelay(options, 0, () => 0), 50);
  assert.equal(backoffDelay(options, 10, () => 1), 1000);
  assert.throws(() => resolveRetryOptions({ retries: -1 }), /retries/);
  assert.throws(() => resolveRetryOptions({ initialDelayMs: 10, maxDelayMs: 5 }), /maxDelayMs/);
});

test('timeout aborts the handler signal and throws a retriable TimeoutError', async () => {
  let sawAbort = false;
  const slow: RawHandler = ({ signal }) =>
    new Promise((resolve) => {
      signal.addEventListener('abort', () => {
        sawAbort = true;
        resolve([]);
      });
    });
  await assert.rejects(timeout(20)(slow)(payload()), (error) => error instanceof TimeoutError && error.retriable);
  assert.ok(sawAbort);
});

test('shutdown is never retried', async () => {
  const controller = new AbortController();
  let calls = 0;
  const handler: RawHandler = async () => {
    calls++;
    controller.abort();
    throw new ConnectionError('x');
  };
  await assert.rejects(retry(fast)(handler)({ record, signal: controller.signal }), ConnectionError);
  assert.equal(calls, 1);
  await assert.rejects(retry(fast)(async () => { throw new ShutdownError(); })(payload()), ShutdownError);
});

test('compose puts the first middleware outermost', async () => {
  const order: string[] = [];
  const tag = (name: string) => (next: RawHandler): RawHandler => async (p) => {
    order.push(name);
    return next(p);
  };
  await compose(async () => [], tag('a'), tag('b'))(payload());
  assert.deepEqual(order, ['a', 'b']);
});
