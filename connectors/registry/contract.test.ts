import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TOPICS, ValidationError } from '../../schemas/index.js';
import { syntheticTrajectory } from '../../test/integration/analytics-fixtures.js';
import { parseContract, WireCheck } from './contract.js';

const wire = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

test("WireCheck takes what zod takes and refuses what zod refuses, in zod's words", () => {
  const check = new WireCheck();
  const trajectory = wire(syntheticTrajectory(3, { steps: 2 })) as Record<string, unknown>;
  check.check('trajectories', trajectory);
  // A newer writer's field is no error (zod strips it), nor is a defaulted field left out.
  check.check('trajectories', { ...trajectory, addedLater: 1, finalExtras: undefined });
  const broken = { ...trajectory, groupSize: 0, outcome: 'gave-up' };
  const zodError = (() => {
    try {
      parseContract('trajectories', broken);
    } catch (error) {
      return error as ValidationError;
    }
    throw new Error('zod took a broken trajectory');
  })();
  assert.throws(
    () => check.check('trajectories', broken),
    (error: unknown) => error instanceof ValidationError && error.message === zodError.message,
  );
  assert.throws(() => check.check('trajectories', { ...trajectory, lineage: { ...(trajectory.lineage as object), createdAt: '2025-02-30T00:00:00Z' } }), /lineage\.createdAt/);
  assert.throws(() => check.check('trajectories', { ...trajectory, totalMs: Infinity }), /totalMs/, 'JSON.parse reads 1e400 as Infinity; zod refuses it');
});

test('WireCheck runs zod too where the contract has refinements JSON Schema cannot hold', () => {
  const check = new WireCheck();
  const taskRecord = {
    taskId: 't-1',
    envId: 'program-repair/v1',
    title: 'x',
    description: 'x',
    files: { 'a.py': 'x = 1\n' },
    visibleTests: {},
    hiddenTests: {},
    referenceSolution: null,
    tags: [],
    priority: 0,
    split: 'train',
    difficulty: 0.5,
    source: { dataset: 'd', datasetHash: 'h', jobRunId: 'j', sourceRow: 1 },
    lineage: { taskId: 't-1', attempt: 0, runId: 'r', policyVersion: 0, sandboxImageDigest: null, verifierVersion: null, createdAt: '2025-01-01T00:00:00.000Z' },
  };
  const parsed = TOPICS.tasks.schema.safeParse(taskRecord);
  assert.ok(parsed.success, parsed.success ? '' : parsed.error.message);
  check.check('tasks', taskRecord);
  // An output check that reads both a file and stdout passes the JSON Schema and fails zod's refinement.
  const markdown = { type: 'markdown', headings: ['## Usage'] };
  check.check('tasks', { ...taskRecord, verification: { check: { kind: 'output', checks: [{ ...markdown, path: 'README.md' }] } } });
  assert.throws(() => check.check('tasks', { ...taskRecord, verification: { check: { kind: 'output', checks: [{ ...markdown, path: 'README.md', stdout: true }] } } }), /exactly one of `path` or `stdout`/);
});
