import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SandboxError, WorkspaceFileError, isRetriable } from '../../schemas/index.js';
import { startHostAgent } from '../../test/fixtures/host-agent.js';
import type { AgentChannel } from './agent-channel.js';
import type { AgentSandbox } from './agent-sandbox.js';

// File requests are judged by the agent; it runs the same on the host, so this needs no Docker.
const refusal = (reason: string, message: RegExp) => (error: unknown) =>
  error instanceof WorkspaceFileError && error.reason === reason && !isRetriable(error) && message.test(error.message);

describe('file requests through the sandbox agent', () => {
  let agent: ChildProcess;
  let channel: AgentChannel;
  let sandbox: AgentSandbox;
  let workdir: string;

  before(async () => {
    ({ agent, channel, sandbox, workdir } = await startHostAgent('files'));
  });

  after(() => {
    agent.kill('SIGKILL');
  });

  it('refuses bad paths with a WorkspaceFileError the caller can show', async () => {
    symlinkSync('/etc', join(workdir, 'etc-link'));
    const cases: Array<[string, RegExp]> = [
      ['/etc/x', /^path must be relative to the workspace: \/etc\/x is absolute$/],
      ['../x', /resolves outside .* goes up with '\.\.'/],
      ['a\0b', /NUL byte/],
      ['n'.repeat(300), /name of 300 bytes, over the 255-byte limit/],
      [Array(30).fill('d'.repeat(200)).join('/'), /over the 4096-byte limit of a path/],
      ['etc-link/passwd', /through a symlink \(to \/etc\/passwd\)/],
    ];
    for (const [path, message] of cases) {
      await assert.rejects(sandbox.readFiles([path], workdir), refusal('bad-path', message), path.slice(0, 40));
      await assert.rejects(sandbox.writeFiles({ [path]: 'x' }, workdir), refusal('bad-path', message), path.slice(0, 40));
    }
  });

  it('says why a read failed: missing, a directory, too large, not UTF-8', async () => {
    mkdirSync(join(workdir, 'folder'));
    writeFileSync(join(workdir, 'binary'), Buffer.from([0x61, 0xff]));
    writeFileSync(join(workdir, 'big'), 'x'.repeat(2000));
    await assert.rejects(sandbox.readFile('nope.py', workdir), refusal('missing', /^no such file: nope\.py$/));
    await assert.rejects(sandbox.readFile('folder', workdir), refusal('directory', /folder is a directory/));
    await assert.rejects(sandbox.readFile('big', workdir, { maxBytes: 1000 }), refusal('too-large', /big is 2000 bytes, over the 1000/));
    await assert.rejects(sandbox.readFile('binary', workdir), refusal('not-utf8', /binary is not UTF-8 text \(byte 1 is 0xff\)/));
    await assert.rejects(sandbox.readFile('x', workdir, { maxBytes: -1 }), /ReadOptions\.maxBytes must be a whole number/);
  });

  it('snapshots names of any bytes, symlinks as symlinks, and says what it left out', async () => {
    const tree = mkdtempSync(join(tmpdir(), 'trialrun-snapshot-'));
    const raw = (name: string | Buffer) => Buffer.concat([Buffer.from(`${tree}/`), Buffer.from(name)]);
    writeFileSync(raw('new\nline.py'), 'a');
    writeFileSync(raw('-rf'), 'b');
    writeFileSync(raw('__proto__'), 'c');
    writeFileSync(raw(Buffer.from([0x62, 0xff, 0x2e, 0x70, 0x79])), 'd');
    writeFileSync(raw('b%FF.py'), 'real');
    writeFileSync(raw(Buffer.from([0x63, 0xfe])), 'e');
    writeFileSync(raw('big'), 'x'.repeat(3000));
    symlinkSync('/etc/passwd', raw('escape'));
    symlinkSync(raw(Buffer.from([0x74, 0xff])), raw('odd'));
    const snapshot = await sandbox.snapshot({ dir: tree, maxFileBytes: 1000 });
    assert.deepEqual(Object.keys(snapshot.files).sort(), ['-rf', '__proto__', 'b%FF.py', 'c%FE', 'new\nline.py']);
    assert.equal(Object.getPrototypeOf(snapshot.files), Object.prototype, 'a file called __proto__ is a file, not a prototype');
    assert.equal(snapshot.files['b%FF.py'], 'real', 'the real UTF-8 name keeps the key its escaped twin would spell');
    assert.deepEqual(snapshot.extras.escapedPaths, ['c%FE']);
    assert.deepEqual(
      [...snapshot.extras.symlinks].sort((a, b) => a.path.localeCompare(b.path)),
      [
        { path: 'escape', target: '/etc/passwd', pathEscaped: false, targetEscaped: false },
        { path: 'odd', target: `${tree}/t%FF`, pathEscaped: false, targetEscaped: true },
      ],
    );
    assert.deepEqual(
      snapshot.skipped.map(({ path, escaped }) => ({ path, escaped })).sort((a, b) => a.path.localeCompare(b.path)),
      [
        { path: 'b%FF.py', escaped: true },
        { path: 'big', escaped: false },
      ],
    );
  });

  it('names the task that holds the sandbox in its errors', async () => {
    channel.assign('task-now');
    const pending = sandbox.exec(['sleep', '30'], { cwd: workdir });
    channel.close('the test closed it');
    await assert.rejects(pending, (error: unknown) => error instanceof SandboxError && /^sandbox host-agent \(task task-now\) is gone/.test(error.message));
  });
});
