import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CheckpointStore } from '../../connectors/checkpoints/index.js';
import type { SandboxPool } from '../../connectors/sandbox/index.js';
import { LLM_POLICY, resolveLlmPolicyOptions } from '../../policies/index.js';
import { ConfigError, type Task } from '../../schemas/index.js';
import type { ProcessorContext } from '../runtime/index.js';
import type { ExternalLearner } from './external-learner.js';
import { runLoop, type LoopOptions } from './loop.js';

// The refusals come before anything is touched: a context, pool, store or learner that is used would throw.
const unused = new Proxy({}, { get: (_, name) => { throw new Error(`touched ${String(name)}`); } });
const repairTask = { taskId: 'r', envId: 'program-repair/v1', files: { 'a.py': '' }, visibleTests: {}, hiddenTests: {} } as unknown as Task;
const loop = (options: Partial<LoopOptions>): Promise<unknown> =>
  runLoop(unused as ProcessorContext, { tasks: [repairTask], dataDir: '/nonexistent', pool: unused as SandboxPool, imageFor: () => 'x', checkpoints: unused as CheckpointStore, ...options });

test('an external learner goes with a policy trained outside the process only, and not with the synchronous schedule', async () => {
  await assert.rejects(loop({ externalLearner: unused as ExternalLearner }), (error: unknown) => error instanceof ConfigError && /LoopOptions\.externalLearner goes with a policy trained outside this process \(llm\), not linear-repair/.test(error.message));
  const llm = resolveLlmPolicyOptions({}, {});
  await assert.rejects(loop({ policyId: LLM_POLICY, llm, externalLearner: unused as ExternalLearner, schedule: 'synchronous', groupSize: 2, batchSize: 2 }), (error: unknown) => error instanceof ConfigError && /'synchronous' needs a policy trained in this process/.test(error.message));
});
