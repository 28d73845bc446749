import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../../schemas/index.js';
import { AnalyticsSink } from './sink.js';

// Options are resolved before the sink touches its context, so none is needed to check them.
const refuses = (options: Partial<ConstructorParameters<typeof AnalyticsSink>[1]>, message: RegExp): void =>
  assert.throws(() => new AnalyticsSink({} as never, { dataDir: '/tmp/unused', ...options }), (error: unknown) => error instanceof ConfigError && message.test(error.message));

test('the sink refuses a writer thread count that is not a whole number >= 1, naming the option', () => {
  refuses({ writerThreads: 0 }, /AnalyticsSinkOptions\.writerThreads must be a whole number >= 1, got 0/);
  refuses({ writerThreads: 1.5 }, /AnalyticsSinkOptions\.writerThreads must be a whole number >= 1, got 1.5/);
});

test('the sink refuses a buffer bound below the roll size, naming both', () => {
  refuses({ rollBytes: 2048, maxBufferedBytes: 1024 }, /AnalyticsSinkOptions\.maxBufferedBytes \(1024\) must be at least rollBytes \(2048\)/);
});
