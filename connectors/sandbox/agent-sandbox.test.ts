import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { isRetriable } from '../../schemas/index.js';
import { startHostAgent } from '../../test/fixtures/host-agent.js';
import { hostProcessesWith, rendezvous, uniqueMarker } from '../../test/fixtures/processes.js';
import type { AgentSandbox } from './agent-sandbox.js';

// The agent's process handling runs the same on the host as in a sandbox, so it is tested here without Docker.

/** Waits for a condition with a generous deadline (a loaded machine is slow, not wrong). */
async function until(what: string, probe: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe('the sandbox agent, run as a plain process', () => {
  let agent: ChildProcess;
  let sandbox: AgentSandbox;
  let workdir: string;

  before(async () => {
    ({ agent, sandbox, workdir } = await startHostAgent('agent'));
  });

  after(() => {
    agent.kill('SIGKILL');
  });

  it('runs a command and reports its exit code and both streams', async () => {
    const result = await sandbox.exec(['sh', '-c', 'echo out; echo err >&2; exit 3'], { cwd: workdir });
    assert.deepEqual({ ...result, durationMs: 0 }, { status: 'exited', exitCode: 3, stdout: 'out\n', stderr: 'err\n', truncated: false, durationMs: 0 });
  });

  it('reports a command killed by a signal as 128 + the signal number', async () => {
    const result = await sandbox.exec(['sh', '-c', 'kill -9 $$'], { cwd: workdir });
    assert.equal(result.status, 'exited');
    assert.equal(result.exitCode, 137);
  });

  it('feeds stdin and passes env and cwd', async () => {
    const result = await sandbox.exec(['sh', '-c', 'cat; echo " $GREETING $(pwd)"'], { stdin: 'from stdin', env: { GREETING: 'hi' }, cwd: workdir });
    assert.equal(result.stdout, `from stdin hi ${workdir}\n`);
  });

  it('says which program could not be started', async () => {
    const result = await sandbox.exec(['no-such-program-here'], { cwd: workdir });
    assert.equal(result.exitCode, 127);
    assert.match(result.stderr, /cannot run no-such-program-here/);
  });

  it('keeps the head and tail of a flood of output and marks it truncated', async () => {
    const result = await sandbox.exec(['python3', '-c', 'import sys\nsys.stdout.write("H" * 1000 + "x" * 5_000_000 + "T" * 1000)'], { maxOutputBytes: 2000, cwd: workdir });
    assert.equal(result.truncated, true);
    assert.ok(result.stdout.startsWith('H'.repeat(1000)) && result.stdout.endsWith('T'.repeat(1000)), result.stdout.slice(0, 100));
    assert.match(result.stdout, /\[\.\.\. 5000000 bytes truncated \.\.\.\]/);
  });

  it('kills the whole tree at the deadline, setsid and double-forked processes included', async () => {
    const marker = uniqueMarker();
    const script = `trap '' TERM; setsid sleep ${marker} & (sleep ${marker} &) ; sleep ${marker}`;
    const result = await sandbox.exec(['sh', '-c', script], { timeoutMs: 500, cwd: workdir });
    assert.equal(result.status, 'timeout');
    assert.equal(result.exitCode, null);
    assert.deepEqual(hostProcessesWith(`sleep\0${marker}`), [], 'no process of the command survived');
  });

  it('kills background processes when the command exits', async () => {
    const marker = uniqueMarker();
    const result = await sandbox.exec(['sh', '-c', `setsid sleep ${marker} >/dev/null 2>&1 & echo started`], { cwd: workdir });
    assert.equal(result.stdout, 'started\n');
    await until('the background process to be killed', () => hostProcessesWith(`sleep\0${marker}`).length === 0);
  });

  it('cancels a command through its AbortSignal', async () => {
    const marker = uniqueMarker();
    const controller = new AbortController();
    const running = sandbox.exec(['sleep', marker], { signal: controller.signal, cwd: workdir });
    await until('the command to run', () => hostProcessesWith(`sleep\0${marker}`).length === 1);
    controller.abort();
    const result = await running;
    assert.equal(result.status, 'timeout');
    assert.deepEqual(hostProcessesWith(`sleep\0${marker}`), [], 'the cancelled command is gone');
  });

  it('runs several commands at once', async () => {
    // Each command waits until all four have started, so commands run one after another would time out.
    const tag = uniqueMarker();
    const results = await Promise.all([1, 2, 3, 4].map((n) => sandbox.exec(['sh', '-c', rendezvous(tag, n, 4)], { cwd: workdir, timeoutMs: 60_000 })));
    assert.deepEqual(
      results.map((r) => `${r.status} ${r.stdout}`),
      ['exited 1\n', 'exited 2\n', 'exited 3\n', 'exited 4\n'],
    );
  });

  it('keeps the streams of many overlapping commands apart', async () => {
    // Commands finish in a different order than they started, so pipe numbers are freed and reused meanwhile.
    const runs = [...Array(24).keys()].map((n) => sandbox.exec(['sh', '-c', `sleep 0.${(n * 7) % 10}; echo out-${n}; echo err-${n} >&2`], { cwd: workdir }));
    const results = await Promise.all(runs);
    results.forEach((result, n) => {
      assert.equal(result.stdout, `out-${n}\n`);
      assert.equal(result.stderr, `err-${n}\n`);
    });
  });

  it('writes and reads files, and refuses paths outside the folder', async () => {
    await sandbox.writeFiles({ 'pkg/mod.py': 'x = 1\n', 'notes.txt': 'é\n' }, workdir);
    assert.deepEqual(await sandbox.readFiles(['pkg/mod.py', 'notes.txt'], workdir), { 'pkg/mod.py': 'x = 1\n', 'notes.txt': 'é\n' });
    assert.equal(await sandbox.readFile('notes.txt', workdir), 'é\n');
    await assert.rejects(sandbox.writeFiles({ '../escape.txt': 'x' }, workdir), /resolves outside/);
    await assert.rejects(sandbox.readFiles(['/etc/passwd'], workdir), /is absolute/);
    await assert.rejects(sandbox.readFiles(['missing.txt'], workdir), /missing\.txt/);
  });

  it('fails pending commands with a retriable error when the agent dies', async () => {
    const marker = uniqueMarker();
    const pending = sandbox.exec(['sleep', marker], { cwd: workdir });
    await until('the command to run', () => hostProcessesWith(`sleep\0${marker}`).length === 1);
    agent.kill('SIGKILL');
    await assert.rejects(pending, (error: Error) => isRetriable(error) && /is gone/.test(error.message));
    await assert.rejects(sandbox.exec(['true']), /is gone/);
  });
});
