import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SandboxPool } from '../../connectors/sandbox/index.js';
import { ConfigError, type Task } from '../../schemas/index.js';
import { specOf, Verifier } from './verifier.js';

// Nothing here reaches a sandbox: a pool that is used fails the test.
const pool = { acquire: () => Promise.reject(new Error('no sandbox in a unit test')), close: async () => {} } as unknown as SandboxPool;
const task = { taskId: 't', files: { 'a.py': 'x = 1\n' }, visibleTests: {}, hiddenTests: {}, referenceSolution: null } as unknown as Task;
const verifier = new Verifier({ runId: 'unit', pool, imageFor: (recipe) => `image/${recipe}`, tasks: { get: () => task } });
const signal = new AbortController().signal;

test('a task without a spec is program repair; a spec and an image of its own are part of its verifier configuration', () => {
  assert.deepEqual(specOf(task).check, { kind: 'tests', runner: 'pytest', failToPass: [], passToPass: [] });
  assert.deepEqual(verifier.configFor(task), verifier.config);
  const own: Task = { ...task, image: 'node-repair', verification: { check: { kind: 'script', command: ['grade'] }, reward: { shape: 'fraction' } } };
  assert.deepEqual(verifier.configFor(own), { ...verifier.config, recipe: 'node-repair', verification: own.verification });
});

test('a command runner without its command or report path is refused before any sandbox, naming what is missing', async () => {
  const broken: Task = { ...task, verification: { check: { kind: 'tests', runner: 'command', failToPass: [], passToPass: [] } } };
  assert.deepEqual(await verifier.expectedIds(broken, signal), { ids: [], problem: "its tests check with runner 'command' has no `command` and no `junitPath`" });
  await assert.rejects(verifier.check(broken, {}, [], signal), (error: unknown) => error instanceof ConfigError && /task t cannot be verified: .* no `command` and no `junitPath`/.test(error.message));
});

test('the ids of the graded kinds come from the spec, without a sandbox', async () => {
  const output: Task = { ...task, verification: { check: { kind: 'output', checks: [{ type: 'markdown', path: 'README.md', headings: ['# X'] }] } } };
  assert.deepEqual(await verifier.expectedIds(output, signal), { ids: ['check[0]:markdown:README.md'], problem: null });
});

test('a trajectory whose final files are in the artifact store needs one configured', async () => {
  const trajectory = { trajectoryId: 'tr', finalFiles: {}, finalFilesRef: { digest: `sha256:${'0'.repeat(64)}`, files: 1, bytes: 1 } } as never;
  await assert.rejects(verifier.finalFilesOf(trajectory), (error: unknown) => error instanceof ConfigError && /keeps its final files in the artifact store .*\(VerifierOptions\.trees\)/.test(error.message));
});
