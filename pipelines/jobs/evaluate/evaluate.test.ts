import assert from 'node:assert/strict';
import test from 'node:test';
import type { SandboxPool } from '../../../connectors/sandbox/index.js';
import { ConfigError, type Task } from '../../../schemas/index.js';
import { evaluationVerifier } from './evaluate.js';

test('an evaluation verifier knows exactly the tasks it was made for, and names any other', async () => {
  const unusedPool = {} as SandboxPool;
  const verifier = evaluationVerifier([{ taskId: 'held-1' } as Task], { pool: unusedPool, imageFor: (recipe) => recipe, runId: 'eval-test' });
  const trajectory = { trajectoryId: 't', lineage: { taskId: 'train-7' } } as never;
  await assert.rejects(verifier.verify(trajectory, new AbortController().signal), (error: unknown) => error instanceof ConfigError && /task train-7 is not among the 1 tasks it was made for/.test(error.message));
});
