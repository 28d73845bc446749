import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AgentSandboxPool } from '../../connectors/sandbox/index.js';
import { makeEnv, type Environment, type RepairObservation } from '../../envs/index.js';
import { WorkspaceExtras, type Task, type ToolCall } from '../../schemas/index.js';
import { imageFor } from '../../stack/index.js';
import { ensureStack } from './harness.js';
import { BACKENDS } from './sandbox-backends.js';
import { bundledTasks, moduleOf } from './verifier-fixtures.js';

// Every call here is something an agent (an LLM, say) may send. Each must come back as a failed ToolResult that
// says what was wrong, with the episode going on; the submit at the end must carry every name the agent made.
const MiB = 1024 * 1024;
const WEIRD_NAMES = ['new\nline.py', '-rf.py', `${'n'.repeat(250)}.py`, 'sub/dir/deep.py', '__proto__', 'spaced name.txt', 'naïve.py'];

/** Python appended to the module under repair: importing it (run_tests does) makes what write_file cannot. */
const MAKE_ODD_ENTRIES = `
import os as _os
if not _os.path.lexists('link'):
    _os.symlink('/etc/passwd', 'link')
    _os.symlink('/etc', 'etc-link')
    with open(b'bad\\xff\\xfe.py', 'w') as _f:
        _f.write('not utf-8 name')
    with open('binary.dat', 'wb') as _f:
        _f.write(b'\\xff\\x00\\xfe')
    _os.makedirs('locked/inner')
    _os.chmod('locked', 0)
    _os.mkfifo('pipe')
`;

const call = (name: string, args: Record<string, unknown> = {}): ToolCall => ({ name, arguments: args });

for (const backend of BACKENDS) {
  describe(`program-repair/v1 against hostile and clumsy calls (${backend.name} backend)`, () => {
    let pool: AgentSandboxPool;
    let task: Task;

    before(async () => {
      await ensureStack();
      task = (await bundledTasks(1))[0]!;
      pool = backend.pool({ warmSize: 0, limits: { workspaceBytes: 8 * MiB } });
    });

    after(async () => {
      await pool.close();
    });

    it('answers every bad call with a failed ToolResult, goes on, and submits every odd name and symlink', { timeout: 180_000 }, async () => {
      const env = makeEnv(task.envId, { pool, runId: 'env-adversarial', imageFor, maxTurns: 200 }) as Environment<RepairObservation>;
      const module = moduleOf(task);
      let turn = 0;
      const step = async (action: ToolCall) => {
        const transition = await env.step(action);
        turn++;
        assert.equal(transition.observation.turn, turn, 'the episode went on');
        return transition;
      };
      const refused = async (action: ToolCall, message: RegExp) => {
        const { result, done, finalFiles } = await step(action);
        assert.equal(result.ok, false, `${action.name} ${JSON.stringify(action.arguments).slice(0, 80)} should fail, got ${result.output.slice(0, 200)}`);
        assert.match(result.output, message);
        assert.equal(done, false);
        assert.equal(finalFiles, null);
      };
      try {
        await env.init(task);
        // What run_tests makes when it imports the module: a symlink out of the workspace, a name that is not UTF-8.
        assert.equal((await step(call('write_file', { path: module, content: `${task.files[module]}\n${MAKE_ODD_ENTRIES}` }))).result.ok, true);
        await step(call('run_tests'));

        const bad: Array<[string, RegExp]> = [
          ['/etc/passwd', /^path must be relative to the workspace: \/etc\/passwd is absolute$/],
          ['../outside.py', /path must stay inside the workspace: \.\.\/outside\.py resolves outside/],
          ['sub/../../x', /goes up with '\.\.'/],
          ['a\0b.py', /must not contain a NUL byte/],
          ['n'.repeat(256), /name of 256 bytes, over the 255-byte limit/],
          [Array(25).fill('d'.repeat(200)).join('/'), /over the 4096-byte limit of a path/],
          ['etc-link/passwd', /through a symlink \(to \/etc\/passwd\)/],
          ['link', /through a symlink \(to \/etc\/passwd\)/],
          ['', /must not be empty/],
          ['\ud800.py', /not valid Unicode text/],
        ];
        for (const [path, message] of bad) {
          await refused(call('read_file', { path }), message);
          await refused(call('write_file', { path, content: 'x = 1\n' }), message);
        }
        await refused(call('read_file', { path: 'missing.py' }), /^no such file: missing\.py$/);
        await refused(call('read_file', { path: '.' }), /is a directory/);
        await refused(call('read_file', { path: 'binary.dat' }), /binary\.dat is not UTF-8 text \(byte 0 is 0xff\)/);
        await refused(call('read_file', { path: 42 }), /argument "path" must be a string, got 42/);
        await refused(call('read_file', {}), /argument "path" must be a string, got nothing/);
        await refused(call('read_file', { path: module, extra: 1 }), /takes no argument "extra" \(it takes path\)/);
        await refused(call('write_file', { path: 'x.py', content: 7 }), /argument "content" must be a string/);
        await refused(call('write_file', { path: 'huge.txt', content: 'x'.repeat(MiB + 1) }), /content is 1048577 bytes; files up to 1048576 bytes can be written/);
        // Fill the 8 MiB workspace file by file: the write that does not fit says so, then the space is freed.
        const fills: string[] = [];
        for (let full = false; !full; ) {
          assert.ok(fills.length < 12, 'an 8 MiB workspace is full after a few 1 MiB files');
          const path = `fill-${fills.length}.txt`;
          fills.push(path);
          const written = await step(call('write_file', { path, content: 'x'.repeat(MiB) }));
          full = !written.result.ok;
          if (full) assert.match(written.result.output, new RegExp(`^no space left in the sandbox for ${path} \\(its size or file-count limit\\)$`));
        }
        for (const path of fills.slice(0, -1)) assert.equal((await step(call('write_file', { path, content: '' }))).result.ok, true);
        await refused(call('write_file', { path: 'lone.py', content: '\udc80' }), /content of lone\.py is not valid Unicode text/);
        await refused(call('write_file', { path: `${module}/inner.py`, content: 'x' }), /a file of that name is in the way/);
        await refused(call('apply_edit', { id: 99_999 }), /edit id 99999 out of range/);
        await refused(call('apply_edit', { id: -1 }), /edit id -1 out of range/);
        await refused(call('apply_edit', { id: '3' }), /argument "id" must be a whole number, got "3"/);
        await refused(call('apply_edit', { id: 1.5 }), /must be a whole number, got 1\.5/);
        await refused(call('rm_rf', { path: '/' }), /unknown tool "rm_rf"; tools: read_file, write_file/);
        await refused({ name: 'run_tests', arguments: null } as unknown as ToolCall, /tool run_tests: arguments must be an object, got null/);
        await refused({ name: 'submit', arguments: ['x'] } as unknown as ToolCall, /arguments must be an object/);
        await refused(call('list_edits', { id: 1 }), /takes no argument "id" \(it takes none\)/);

        // A module the agent broke: the repair tool's error is the agent's to see, then the module is restored.
        assert.equal((await step(call('write_file', { path: module, content: 'def broken(:\n' }))).result.ok, true);
        await refused(call('list_edits'), /syntax error in .* at line 1/);
        await refused(call('apply_edit', { id: 0 }), /syntax error/);
        assert.equal((await step(call('write_file', { path: module, content: task.files[module]! }))).result.ok, true);
        assert.equal((await step(call('revert'))).result.ok, true, 'revert with nothing applied is fine');
        assert.equal((await step(call('list_edits'))).result.ok, true);

        for (const path of WEIRD_NAMES) {
          const written = await step(call('write_file', { path, content: `content of ${path}` }));
          assert.equal(written.result.ok, true, `${JSON.stringify(path)}: ${written.result.output}`);
          const read = await step(call('read_file', { path }));
          assert.equal(read.result.output, `content of ${path}`);
        }

        const submitted = await step(call('submit'));
        assert.equal(submitted.done, true);
        assert.equal(submitted.result.ok, true, submitted.result.output);
        assert.match(submitted.result.output, /^submitted; not carried to the verifier:\n/);
        assert.match(submitted.result.output, /"locked": unreadable folder: Permission denied/);
        assert.match(submitted.result.output, /"pipe": not a regular file, folder or symlink/);
        const files = submitted.finalFiles!;
        for (const path of WEIRD_NAMES) assert.equal(files[path], `content of ${path}`, `${JSON.stringify(path)} reached the verifier`);
        assert.ok(Object.hasOwn(files, '__proto__'));
        assert.equal(files['bad%FF%FE.py'], 'not utf-8 name');
        assert.equal(files[module], task.files[module]);
        assert.equal(files[fills.at(-1)!], undefined, 'the write that did not fit left no partial file');
        for (const path of Object.keys(task.visibleTests)) assert.equal(Object.hasOwn(files, path), false, 'the verifier brings the visible tests');
        const extras = WorkspaceExtras.parse(submitted.finalExtras);
        assert.deepEqual(extras.escapedPaths, ['bad%FF%FE.py']);
        assert.deepEqual(
          [...extras.symlinks].sort((a, b) => a.path.localeCompare(b.path)),
          [
            { path: 'etc-link', target: '/etc', pathEscaped: false, targetEscaped: false },
            { path: 'link', target: '/etc/passwd', pathEscaped: false, targetEscaped: false },
          ],
        );
      } finally {
        await env.close();
      }
    });

    it('goes on when the agent locks itself out of its workspace (chmod 000), and still submits', { timeout: 120_000 }, async () => {
      const env = makeEnv(task.envId, { pool, runId: 'env-adversarial', imageFor, maxTurns: 20 }) as Environment<RepairObservation>;
      const module = moduleOf(task);
      try {
        await env.init(task);
        assert.equal((await env.step(call('write_file', { path: module, content: `${task.files[module]}\nimport os as _os\n_os.chmod('.', 0)\n` }))).result.ok, true);
        await env.step(call('run_tests'));
        const read = await env.step(call('read_file', { path: module }));
        assert.deepEqual([read.result.ok, read.result.output], [false, `permission denied: ${module}`]);
        const written = await env.step(call('write_file', { path: 'x.py', content: '' }));
        assert.deepEqual([written.result.ok, written.result.output], [false, 'permission denied: x.py']);
        const submitted = await env.step(call('submit'));
        assert.equal(submitted.done, true);
        assert.deepEqual(submitted.finalFiles, {});
        assert.match(submitted.result.output, /not carried to the verifier:\n"": unreadable folder: Permission denied/);
      } finally {
        await env.close();
      }
    });
  });
}
