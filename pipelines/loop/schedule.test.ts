import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CheckpointStore } from '../../connectors/checkpoints/index.js';
import type { SandboxPool } from '../../connectors/sandbox/index.js';
import { ConfigError, type Task } from '../../schemas/index.js';
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
