import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CheckpointStore } from '../../connectors/checkpoints/index.js';
import type { SandboxPool } from '../../connectors/sandbox/index.js';
import { ConfigError, type Task } from '../../schemas/index.js';
import { LLM_POLICY, resolveLlmPolicyOptions } from '../../policies/index.js';
import type { ProcessorContext } from '../runtime/index.js';
import { runLoop, type LoopOptions } from './loop.js';

// The refusals come before anything is touched: a context, pool or store that is used would throw.
const unused = new Proxy({}, { get: (_, name) => { throw new Error(`touched ${String(name)}`); } });
const repairTask = { taskId: 'r', envId: 'program-repair/v1', files: { 'a.py': '' }, visibleTests: {}, hiddenTests: {} } as unknown as Task;
const loop = (options: Partial<LoopOptions>): Promise<unknown> =>
  runLoop(unused as ProcessorContext, { tasks: [repairTask], dataDir: '/nonexistent', pool: unused as SandboxPool, imageFor: () => 'x', checkpoints: unused as CheckpointStore, ...options });

test('the loop refuses a schedule it does not know, and a synchronous one whose batch is not whole groups, before anything starts', async () => {
  await assert.rejects(loop({ schedule: 'batch' as never }), (error: unknown) => error instanceof ConfigError && /LoopOptions\.schedule must be 'streaming' or 'synchronous', got batch/.test(error.message));
  await assert.rejects(loop({ schedule: 'synchronous', groupSize: 4, batchSize: 6 }), (error: unknown) => error instanceof ConfigError && /a batchSize \(6\) that is a multiple of groupSize \(4\)/.test(error.message));
  await assert.rejects(loop({ concurrentEpisodes: 0 }), (error: unknown) => error instanceof ConfigError && /LoopOptions\.concurrentEpisodes must be a whole number >= 1, got 0/.test(error.message));
});

test('the loop refuses an update budget it could never reach: a negative one, or one for a policy no learner of this run trains', async () => {
  await assert.rejects(loop({ untilVersion: -1 }), (error: unknown) => error instanceof ConfigError && /LoopOptions\.untilVersion must be a whole number >= 0, got -1/.test(error.message));
  const llm = resolveLlmPolicyOptions({ baseUrl: 'http://127.0.0.1:1/v1', server: 'llama.cpp' }, {});
  await assert.rejects(loop({ policyId: LLM_POLICY, llm, untilVersion: 2 }), (error: unknown) => error instanceof ConfigError && /LoopOptions\.untilVersion needs a policy this run trains \(llm has no externalLearner\)/.test(error.message));
});
