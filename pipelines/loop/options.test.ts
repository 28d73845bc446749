import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CheckpointStore } from '../../connectors/checkpoints/index.js';
import type { SandboxPool } from '../../connectors/sandbox/index.js';
import { ConfigError, type Task } from '../../schemas/index.js';
import { LEARNER_DEFAULTS } from '../learner/index.js';
import { ROLLOUT_WORKER_DEFAULTS } from '../rollout-worker/index.js';
import { resolveLoop, type LoopOptions } from './options.js';

// Resolving touches nothing: a pool or store that is used would throw.
const unused = new Proxy({}, { get: (_, name) => { throw new Error(`touched ${String(name)}`); } });
const repairTask = { taskId: 'r', envId: 'program-repair/v1', files: { 'a.py': '' }, visibleTests: {}, hiddenTests: {} } as unknown as Task;
const resolve = (options: Partial<LoopOptions>) => resolveLoop({ tasks: [repairTask], dataDir: '/nonexistent', pool: unused as SandboxPool, imageFor: () => 'x', checkpoints: unused as CheckpointStore, ...options });
const refused = (pattern: RegExp) => (error: unknown) => error instanceof ConfigError && pattern.test(error.message);

test("the loop's stages get the stages' own defaults, and the loop's settings where it has its own", async () => {
  const resolved = await resolve({ tasksPerWorker: 2 });
  assert.equal(resolved.groupSize, ROLLOUT_WORKER_DEFAULTS.groupSize);
  assert.equal(resolved.batchSize, LEARNER_DEFAULTS.batchSize);
  assert.equal(resolved.rolloutWorker.maxTurns, ROLLOUT_WORKER_DEFAULTS.maxTurns);
  // The loop runs one episode of a task at a time unless told (the worker alone runs two), in its own lanes.
  assert.equal(resolved.rolloutWorker.concurrency, 1);
  assert.equal(resolved.rolloutWorker.lanes, 2);
  assert.equal(resolved.rolloutWorker.timeoutMs, ROLLOUT_WORKER_DEFAULTS.timeoutMs);
  assert.deepEqual(resolved.learner, { ...LEARNER_DEFAULTS, learningRate: undefined, clip: undefined });
});

test("a stage's bad setting is refused by that stage's resolver, naming its option, before a task file is read", async () => {
  // The task file does not exist: the refusal comes first.
  await assert.rejects(resolve({ tasks: undefined, taskFile: '/nonexistent/tasks.jsonl', maxTurns: 0 }), refused(/^RolloutWorkerOptions\.maxTurns must be a whole number >= 1, got 0$/));
  await assert.rejects(resolve({ groupSize: -2 }), refused(/^RolloutWorkerOptions\.groupSize /));
  await assert.rejects(resolve({ epochs: 0 }), refused(/^LearnerOptions\.epochs must be a whole number >= 1, got 0$/));
  await assert.rejects(resolve({ maxStaleness: -1 }), refused(/^LearnerOptions\.maxStaleness /));
  await assert.rejects(resolve({ rolloutWorkers: 0 }), refused(/^LoopOptions\.rolloutWorkers must be a whole number >= 1, got 0$/));
});
