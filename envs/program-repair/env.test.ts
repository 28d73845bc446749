import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ExecResult, Sandbox, SandboxPool, WorkspaceSnapshot } from '../../connectors/sandbox/index.js';
import { SandboxError, WorkspaceFileError, type Task } from '../../schemas/index.js';
import { ProgramRepairEnv } from './env.js';

const TASK = {
  taskId: 'clamp-1',
  envId: 'program-repair/v1',
  description: 'fix clamp',
  files: { 'clamp.py': 'def clamp(x, lo, hi):\n    return x\n' },
  visibleTests: { 'test_clamp.py': 'from clamp import clamp\n' },
  hiddenTests: {},
} as unknown as Task;

const exited = (stdout: string, exitCode = 0, stderr = ''): ExecResult => ({ status: 'exited', exitCode, stdout, stderr, truncated: false, durationMs: 1 });

/** A sandbox whose answers the test scripts: `exec` answers by the repair tool's subcommand. */
function fakeSandbox(answers: { exec?: (command: readonly string[]) => Promise<ExecResult>; readFile?: () => Promise<string>; snapshot?: WorkspaceSnapshot }): Sandbox {
  return {
    id: 'fake',
    imageDigest: 'sha256:fake',
    exec: async (command) => (answers.exec ?? (async () => exited('{}')))(command),
    writeFiles: async () => undefined,
    readFiles: async () => ({}),
    readFile: answers.readFile ?? (async () => ''),
    snapshot: async () => answers.snapshot ?? { files: {}, extras: { escapedPaths: [], symlinks: [] }, skipped: [] },
    forward: async () => {
      throw new Error('no forwarding in this test');
    },
    release: async () => undefined,
  };
}

async function envOver(sandbox: Sandbox, maxTurns = 50): Promise<ProgramRepairEnv> {
  const pool: SandboxPool = { acquire: async () => sandbox, close: async () => undefined };
  const env = new ProgramRepairEnv({ pool, runId: 'run', imageFor: () => 'image', maxTurns });
  await env.init(TASK);
  return env;
}

test('repair-tool failures are the agent\'s to see: a timeout, a crash, an error answer', async () => {
  const byTool: Record<string, ExecResult> = {
    list: { ...exited(''), status: 'timeout', exitCode: null },
    apply: exited('', 1, 'Traceback (most recent call last):\nRecursionError: maximum recursion depth exceeded'),
    revert: exited('{"error": "cannot restore clamp.py: No space left on device"}', 2),
  };
  const env = await envOver(fakeSandbox({ exec: async (command) => byTool[command[2]!]! }));
  const listed = await env.step({ name: 'list_edits', arguments: {} });
  assert.deepEqual([listed.result.ok, listed.result.output, listed.done], [false, 'list did not finish: it ran past its time limit', false]);
  const applied = await env.step({ name: 'apply_edit', arguments: { id: 0 } });
  assert.equal(applied.result.ok, false);
  assert.match(applied.result.output, /^apply failed \(exit 1\): Traceback[\s\S]*RecursionError/);
  const reverted = await env.step({ name: 'revert', arguments: {} });
  assert.deepEqual([reverted.result.ok, reverted.result.output], [false, 'revert failed: cannot restore clamp.py: No space left on device']);
  assert.equal(reverted.observation.turn, 3);
});

test('a refused file request is a failed result with the sandbox\'s reason', async () => {
  const env = await envOver(fakeSandbox({ readFile: async () => Promise.reject(new WorkspaceFileError('no such file: nope.py', 'missing')) }));
  const read = await env.step({ name: 'read_file', arguments: { path: 'nope.py' } });
  assert.deepEqual([read.result.ok, read.result.output, read.done], [false, 'no such file: nope.py', false]);
});

test('a sandbox that is gone is not the agent\'s doing: the step fails with the retriable error', async () => {
  const gone = new SandboxError('sandbox fake (task clamp-1) is gone: its agent closed the connection', { retriable: true });
  const env = await envOver(fakeSandbox({ exec: async () => Promise.reject(gone) }));
  await assert.rejects(env.step({ name: 'run_tests', arguments: {} }), /is gone/);
});

test('the end carries the snapshot: files but the visible tests, extras, and what was left out', async () => {
  const snapshot: WorkspaceSnapshot = {
    files: { 'clamp.py': 'fixed', 'test_clamp.py': 'rewritten by the agent', 'b%FF': 'odd', constructor: 'a file called constructor' },
    extras: { escapedPaths: ['b%FF'], symlinks: [{ path: 'link', target: '/etc/passwd', pathEscaped: false, targetEscaped: false }] },
    skipped: [{ path: 'pipe', escaped: false, reason: 'not a regular file, folder or symlink' }],
  };
  const env = await envOver(fakeSandbox({ snapshot }), 2);
  const first = await env.step({ name: 'nonsense', arguments: {} });
  assert.deepEqual([first.done, first.truncated], [false, false]);
  const last = await env.step({ name: 'run_tests', arguments: {} });
  assert.deepEqual([last.done, last.truncated], [false, false], 'the environment does not count turns: runEpisode applies the cap');
  const truncated = await env.truncate();
  assert.deepEqual(truncated.finalFiles, { 'clamp.py': 'fixed', 'b%FF': 'odd', constructor: 'a file called constructor' });
  assert.deepEqual(truncated.finalExtras, snapshot.extras);

  const submitting = await envOver(fakeSandbox({ snapshot }));
  const submitted = await submitting.step({ name: 'submit', arguments: {} });
  assert.equal(submitted.result.output, 'submitted; not carried to the verifier:\n"pipe": not a regular file, folder or symlink');
});
