import assert from 'node:assert/strict';
import test from 'node:test';
import type { SandboxPool } from '../../../connectors/sandbox/index.js';
import { ConfigError, type Task } from '../../../schemas/index.js';
import { evaluationVerifier, foreignWeights } from './evaluate.js';

test('an evaluation verifier knows exactly the tasks it was made for, and names any other', async () => {
  const unusedPool = {} as SandboxPool;
  const verifier = evaluationVerifier([{ taskId: 'held-1' } as Task], { pool: unusedPool, imageFor: (recipe) => recipe, runId: 'eval-test' });
  const trajectory = { trajectoryId: 't', lineage: { taskId: 'train-7' } } as never;
  await assert.rejects(verifier.verify(trajectory, new AbortController().signal), (error: unknown) => error instanceof ConfigError && /task train-7 is not among the 1 tasks it was made for/.test(error.message));
});

test('an evaluation of one version refuses an episode a language model answered with another version\'s weights', () => {
  const turn = (index: number, policyVersion: number | null) => ({ index, llm: { policyVersion } });
  const episode = (steps: unknown[]) => ({ steps, lineage: { taskId: 'held-1' } }) as never;
  assert.equal(foreignWeights(episode([turn(0, null), { index: 1, llm: null }, turn(2, 0)]), 0), null);
  assert.equal(foreignWeights(episode([turn(0, 0), turn(3, 2)]), 0), 'turn 3 of held-1 was answered by the weights of v2');
  assert.equal(foreignWeights(episode([turn(0, 2)]), 2), null);
});
