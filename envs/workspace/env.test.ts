import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ExecResult, Sandbox, SandboxPool, WorkspaceSnapshot } from '../../connectors/sandbox/index.js';
import { checkTaskPayload } from '../types.js';
import { WorkspaceFileError, type Task } from '../../schemas/index.js';
import { WorkspaceEnv } from './env.js';
import { WORKSPACE } from './spec.js';

const TASK = { taskId: 'ws-1', envId: 'workspace/v1', description: 'fix the package', files: { 'pkg/a.py': 'x = 1\nx = 1\ny = 2\n', 'tests/test_a.py': 'def test(): pass\n' }, visibleTests: {}, hiddenTests: {} } as unknown as Task;
const exited = (stdout: string, exitCode = 0, stderr = ''): ExecResult => ({ status: 'exited', exitCode, stdout, stderr, truncated: false, durationMs: 1 });

/** An in-memory sandbox: files in a map, exec answered by the test. */
function fakeSandbox(exec: (command: readonly string[]) => ExecResult = () => exited('')): { sandbox: Sandbox; files: Map<string, string>; commands: string[][] } {
  const files = new Map<string, string>();
  const commands: string[][] = [];
  const sandbox: Sandbox = {
    id: 'fake',
    imageDigest: 'sha256:fake',
    exec: async (command) => (commands.push([...command]), exec(command)),
    writeFiles: async (tree) => void Object.entries(tree).forEach(([path, text]) => files.set(path, text)),
    readFiles: async () => ({}),
    readFile: async (path) => files.get(path) ?? Promise.reject(new WorkspaceFileError(`no such file: ${path}`, 'missing')),
    snapshot: async (): Promise<WorkspaceSnapshot> => ({ files: Object.fromEntries(files), extras: { escapedPaths: [], symlinks: [] }, skipped: [] }),
    forward: async () => {
      throw new Error('no forwarding in this test');
    },
    release: async () => undefined,
  };
  return { sandbox, files, commands };
}

async function envOver(sandbox: Sandbox, maxTurns = 20): Promise<WorkspaceEnv> {
  const pool: SandboxPool = { acquire: async () => sandbox, close: async () => undefined };
  const env = new WorkspaceEnv({ pool, runId: 'run', imageFor: () => 'image', maxTurns }, 'python-repair');
  await env.init(TASK);
  return env;
}

test('str_replace needs exactly one match and says how many it found', async () => {
  const { sandbox, files } = fakeSandbox();
  const env = await envOver(sandbox);
  const twice = await env.step({ name: 'str_replace', arguments: { path: 'pkg/a.py', old: 'x = 1', new: 'x = 3' } });
  assert.deepEqual([twice.result.ok, twice.result.output], [false, 'str_replace: `old` occurs 2 times in pkg/a.py; it must occur exactly once (include surrounding lines to make it unique)']);
  const none = await env.step({ name: 'str_replace', arguments: { path: 'pkg/a.py', old: 'z = 9', new: '' } });
  assert.match(none.result.output, /occurs 0 times in pkg\/a\.py/);
  const once = await env.step({ name: 'str_replace', arguments: { path: 'pkg/a.py', old: 'y = 2', new: 'y = 5' } });
  assert.equal(once.result.ok, true);
  assert.equal(files.get('pkg/a.py'), 'x = 1\nx = 1\ny = 5\n');
  const missing = await env.step({ name: 'str_replace', arguments: { path: 'nope.py', old: 'a', new: 'b' } });
  assert.deepEqual([missing.result.ok, missing.result.output], [false, 'no such file: nope.py']);
});

test('read_file gives a line range, and refuses one past the end or reversed', async () => {
  const env = await envOver(fakeSandbox().sandbox);
  assert.equal((await env.step({ name: 'read_file', arguments: { path: 'pkg/a.py', startLine: 2, endLine: 3 } })).result.output, 'x = 1\ny = 2\n');
  assert.equal((await env.step({ name: 'read_file', arguments: { path: 'pkg/a.py', endLine: 1 } })).result.output, 'x = 1\n');
  assert.match((await env.step({ name: 'read_file', arguments: { path: 'pkg/a.py', startLine: 9 } })).result.output, /has 3 lines; startLine 9 is past its end/);
  assert.match((await env.step({ name: 'read_file', arguments: { path: 'pkg/a.py', startLine: 3, endLine: 2 } })).result.output, /endLine 2 is before startLine 3/);
});

test('bash reports its exit code and a timeout; a timeout past the cap is refused by name', async () => {
  const { sandbox, commands } = fakeSandbox((command) => (command[2] === 'sleep 99' ? { ...exited(''), status: 'timeout', exitCode: null } : exited('out\n', 3, 'err\n')));
  const env = await envOver(sandbox);
  const failed = await env.step({ name: 'bash', arguments: { command: 'false' } });
  assert.deepEqual([failed.result.ok, failed.result.exitCode, failed.result.output], [false, 3, 'out\n[stderr]\nerr\n[exit code 3]']);
  assert.deepEqual(commands[0], ['bash', '-c', 'false']);
  const slow = await env.step({ name: 'bash', arguments: { command: 'sleep 99', timeoutSeconds: 2 } });
  assert.match(slow.result.output, /timed out after 2 s/);
  const capped = await env.step({ name: 'bash', arguments: { command: 'true', timeoutSeconds: 100_000 } });
  assert.match(capped.result.output, /argument "timeoutSeconds" must be <=300, got 100000/);
});

test('search: no match is an ok result, a bad pattern a failed one with the reason', async () => {
  const { sandbox } = fakeSandbox((command) => (command[2] === '(' ? exited('', 2, 'the pattern is not a valid regular expression: missing )') : exited('', 1)));
  const env = await envOver(sandbox);
  assert.deepEqual((await env.step({ name: 'search', arguments: { pattern: 'zzz', path: '**/*.py' } })).result, { ok: true, output: 'no matches', truncated: false, exitCode: 0 });
  const bad = await env.step({ name: 'search', arguments: { pattern: '(' } });
  assert.deepEqual([bad.result.ok, bad.result.output], [false, 'search failed: the pattern is not a valid regular expression: missing )']);
});

test('the final files are the whole snapshot, at submit or when truncated', async () => {
  const { sandbox } = fakeSandbox();
  const env = await envOver(sandbox, 2);
  assert.equal((await env.step({ name: 'write_file', arguments: { path: 'new.txt', content: 'made' } })).done, false);
  const last = await env.step({ name: 'nonsense', arguments: {} });
  assert.equal(last.done, false, 'the environment does not count turns: runEpisode applies the cap');
  assert.deepEqual((await env.truncate()).finalFiles, { ...TASK.files, 'new.txt': 'made' });
  const submitted = await env.step({ name: 'submit', arguments: {} });
  assert.deepEqual([submitted.done, submitted.truncated, submitted.finalFiles], [true, false, { ...TASK.files, 'new.txt': 'made' }]);
});

test('the payload schema: files needed, visible tests live inside them', () => {
  assert.doesNotThrow(() => checkTaskPayload(WORKSPACE, TASK));
  assert.throws(() => checkTaskPayload(WORKSPACE, { ...TASK, files: {} }), /not a valid workspace\/v1 task:\n {2}files: a workspace task needs at least one file/);
  assert.throws(() => checkTaskPayload(WORKSPACE, { ...TASK, visibleTests: { 'test_x.py': '' } }), /visibleTests must be empty/);
});
