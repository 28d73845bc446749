import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ENVIRONMENTS } from '../../envs/index.js';
import { ConfigError } from '../../schemas/index.js';
import { SANDBOX_RETRY } from '../runtime/index.js';
import { llmTaskTimeoutMs, resolveRolloutWorker, ROLLOUT_WORKER_DEFAULTS } from './options.js';

const refused = (pattern: RegExp) => (error: unknown) => error instanceof ConfigError && pattern.test(error.message);

test('a rollout worker with no settings gets every default', () => {
  assert.deepEqual(resolveRolloutWorker({}), { ...ROLLOUT_WORKER_DEFAULTS, retry: SANDBOX_RETRY, environments: ENVIRONMENTS });
});

test("the llm policy's settings set the defaults of concurrency and the task's budget, and given values win", () => {
  const llm = { concurrentEpisodes: 3, maxEpisodeMs: 60_000 };
  const resolved = resolveRolloutWorker({ groupSize: 7, llm });
  assert.equal(resolved.concurrency, 3);
  assert.equal(resolved.timeoutMs, llmTaskTimeoutMs(llm, 7));
  // 7 samples, 3 at a time: three rounds, each an episode's budget and two minutes for sandboxes and tool calls.
  assert.equal(resolved.timeoutMs, 3 * (60_000 + 120_000));
  const given = resolveRolloutWorker({ groupSize: 7, llm, concurrency: 1, timeoutMs: 5000 });
  assert.deepEqual([given.concurrency, given.timeoutMs], [1, 5000]);
});

test('each bad setting is a ConfigError naming its option', () => {
  assert.throws(() => resolveRolloutWorker({ groupSize: 0 }), refused(/^RolloutWorkerOptions\.groupSize must be a whole number >= 1, got 0$/));
  assert.throws(() => resolveRolloutWorker({ maxTurns: 2.5 }), refused(/^RolloutWorkerOptions\.maxTurns must be a whole number >= 1, got 2\.5$/));
  assert.throws(() => resolveRolloutWorker({ concurrency: -1 }), refused(/^RolloutWorkerOptions\.concurrency /));
  assert.throws(() => resolveRolloutWorker({ timeoutMs: 0 }), refused(/^RolloutWorkerOptions\.timeoutMs /));
  assert.throws(() => resolveRolloutWorker({ storeTreesAboveBytes: -1 }), refused(/^RolloutWorkerOptions\.storeTreesAboveBytes must be a whole number >= 0/));
  assert.throws(() => resolveRolloutWorker({ lanes: 0 }), refused(/^RolloutLanesOptions\.lanes /));
  // One is enough: a single-turn episode is one reply.
  assert.equal(resolveRolloutWorker({ maxTurns: 1 }).maxTurns, 1);
});
