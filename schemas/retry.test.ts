import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isRetriable, KafkaError, LoopDeadlineError, TimeoutError } from './errors.js';
import { resolveRetryOptions, withDeadline, withRetries } from './retry.js';

const quick = resolveRetryOptions({ retries: 3, initialDelayMs: 1, maxDelayMs: 2 });

test('withRetries retries what retryIf accepts, even an error not flagged retriable, and stops at what it refuses', async () => {
  const busy = new KafkaError('busy', 'CONCURRENT_TRANSACTIONS', { retriable: false });
  let tries = 0;
  const result = await withRetries(
    async () => {
      if (++tries < 3) throw busy;
      return 'done';
    },
    quick,
    new AbortController().signal,
    (error) => error instanceof KafkaError && error.code === 'CONCURRENT_TRANSACTIONS',
  );
  assert.equal(result, 'done');
  assert.equal(tries, 3);

  tries = 0;
  const other = new KafkaError('fenced', 'PRODUCER_FENCED', { retriable: true });
  await assert.rejects(
    withRetries(
      async () => {
        tries++;
        throw other;
      },
      quick,
      new AbortController().signal,
      () => false,
    ),
    (error) => error === other,
  );
  assert.equal(tries, 1, 'a refused error is not retried, whatever its own flag says');
});

test('retryIf sees which try failed, so one condition can be retried fewer times than another', async () => {
  const tries: Record<string, number> = { busy: 0, down: 0 };
  const failing = (kind: string) => async (): Promise<never> => {
    tries[kind]!++;
    throw new Error(kind);
  };
  const retryIf = (error: unknown, attempt: number): boolean => (error as Error).message === 'down' || attempt < 1;
  await assert.rejects(withRetries(failing('busy'), quick, new AbortController().signal, retryIf), /busy/);
  await assert.rejects(withRetries(failing('down'), quick, new AbortController().signal, retryIf), /down/);
  assert.deepEqual(tries, { busy: 2, down: 4 });
});

test('withDeadline settles as its work does, or rejects with the expiry error once the time is up', async () => {
  assert.equal(await withDeadline(Promise.resolve(7), 1000, () => new Error('unused')), 7);
  const failure = new Error('its own');
  await assert.rejects(withDeadline(Promise.reject(failure), 1000, () => new Error('unused')), (error) => error === failure);
  const never = new Promise<never>(() => undefined);
  await assert.rejects(withDeadline(never, 5, () => new TimeoutError('the work', 5)), (error) => error instanceof TimeoutError && error.retriable);
});

test('a loop past its deadline is not retried, and says what it still waited on and how far it got', () => {
  const error = new LoopDeadlineError(60_000, { trajectories: 3 }, ['verifications (2 of 4)', 'rewards (1 of 4)']);
  assert.equal(isRetriable(error), false);
  assert.equal(error.name, 'LoopDeadlineError');
  assert.deepEqual(error.waitingOn, ['verifications (2 of 4)', 'rewards (1 of 4)']);
  assert.match(error.message, /within 60000 ms: \{"trajectories":3\}; still waiting on verifications \(2 of 4\), rewards \(1 of 4\)/);
});
