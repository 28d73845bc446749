import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, ConnectionError, ValidationError } from '../schemas/index.js';
import { EXIT_FAILURE, EXIT_USER_ERROR, main, reportError } from './main.js';

/** What `work` writes to stderr; the test runner reports on stdout, which is left alone. */
async function stderrOf<T>(work: () => T | Promise<T>): Promise<{ result: T; stderr: string }> {
  const chunks: string[] = [];
  const write = process.stderr.write;
  process.stderr.write = ((chunk: string) => chunks.push(String(chunk)) > 0) as typeof process.stderr.write;
  try {
    return { result: await work(), stderr: chunks.join('') };
  } finally {
    process.stderr.write = write;
  }
}

test('a user error is one line and exit 2; anything else exit 1; the trace only with --debug', async () => {
  const user = await stderrOf(() => reportError('trialrun demo', new ConfigError('--workers must be a whole number >= 1, got "abc"'), false));
  assert.equal(user.result, EXIT_USER_ERROR);
  assert.equal(user.stderr, 'trialrun demo: --workers must be a whole number >= 1, got "abc"\n');
  assert.equal((await stderrOf(() => reportError('trialrun tasks', new ValidationError('job file', ['sources: Required']), false))).result, EXIT_USER_ERROR);

  const failure = await stderrOf(() => reportError('trialrun sql', new Error('disk full'), false));
  assert.equal(failure.result, EXIT_FAILURE);
  assert.equal(failure.stderr, 'trialrun sql: disk full\n');

  const debug = await stderrOf(() => reportError('trialrun sql', new Error('disk full', { cause: new Error('ENOSPC') }), true));
  assert.match(debug.stderr, /^trialrun sql: disk full\nError: disk full\n\s+at /);
  assert.match(debug.stderr, /caused by:\nError: ENOSPC/);
});

test('a Kafka client connection failure is reported as the address and KAFKA_BROKERS, not the client error', async () => {
  const connection = Object.assign(new Error('Connection error: connect ECONNREFUSED 127.0.0.1:9'), { name: 'KafkaJSConnectionError' });
  const { result, stderr } = await stderrOf(() => reportError('trialrun topics', new Error('retries exceeded', { cause: connection }), false));
  assert.equal(result, EXIT_FAILURE);
  assert.match(stderr, /^trialrun topics: cannot reach Kafka at .*ECONNREFUSED 127\.0\.0\.1:9; start it with `trialrun stack up`, or point KAFKA_BROKERS at a running broker\n$/);
  assert.ok(new ConnectionError('x').retriable, 'still a retriable error for code that retries');
});

test('main: unknown commands and malformed command lines are user errors', async () => {
  const unknown = await stderrOf(() => main(['nope'], {}));
  assert.equal(unknown.result, EXIT_USER_ERROR);
  assert.match(unknown.stderr, /^trialrun: unknown command "nope"; one of stack, demo, /);
  const badFlag = await stderrOf(() => main(['sql', '--bogus', 'x'], {}));
  assert.equal(badFlag.result, EXIT_USER_ERROR);
  assert.match(badFlag.stderr, /^trialrun sql: Unknown option '--bogus'.*\(see trialrun sql --help\)\n$/s);
  const words = await stderrOf(() => main(['compact', 'now'], {}));
  assert.equal(words.result, EXIT_USER_ERROR);
  assert.match(words.stderr, /^trialrun compact: takes no arguments, got "now"/);
  const debug = await stderrOf(() => main(['sql', '--bogus', 'x'], { TRIALRUN_DEBUG: '1' }));
  assert.match(debug.stderr, /\n\s+at /, 'TRIALRUN_DEBUG=1 shows the trace');
});
