import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Docker from 'dockerode';
import type { AgentSandboxPool, Sandbox } from '../../connectors/sandbox/index.js';
import { isRetriable } from '../../schemas/index.js';
import { ensureStack, eventually } from './harness.js';
import { BACKENDS, hostProcessesWith, killFromOutside, rendezvous, sandboxImage, uniqueMarker } from './sandbox-backends.js';

// One contract, both backends: whatever a caller can observe through Sandbox must not depend on the backend.
for (const backend of BACKENDS) {
  describe(`SandboxPool contract (${backend.name} backend)`, () => {
    let pool: AgentSandboxPool;
    let sandbox: Sandbox;
    const acquire = (taskId: string): Promise<Sandbox> => pool.acquire({ image: sandboxImage(), runId: 'contract', taskId });

    before(async () => {
      await ensureStack();
      pool = backend.pool({ warmSize: 1 });
      sandbox = await acquire('contract-1');
    });

    after(async () => {
      await pool.close();
      assert.deepEqual(pool.stats, { held: 0, live: 0, ready: 0, creating: 0, pending: 0, leasesFree: pool.options.maxSandboxes, waitingForLease: 0 }, 'close destroyed every sandbox and gave back every lease');
    });

    it('runs commands as the unprivileged sandbox user in /workspace with the given env and stdin', async () => {
      const result = await sandbox.exec(['sh', '-c', 'id -u; pwd; echo "$GREETING"; cat; echo oops >&2; exit 4'], { env: { GREETING: 'hello' }, stdin: 'piped' });
      assert.equal(result.status, 'exited');
      assert.equal(result.exitCode, 4);
      assert.equal(result.stdout, '1000\n/workspace\nhello\npiped');
      assert.equal(result.stderr, 'oops\n');
      assert.equal(result.truncated, false);
    });

    it('stamps the image id as the digest, the same for both backends', async () => {
      const inspected = await new Docker().getImage(sandboxImage()).inspect();
      assert.equal(sandbox.imageDigest, inspected.Id);
    });

    it('writes, reads and runs files; a missing or outside path is an error naming it', async () => {
      await sandbox.writeFiles({ 'calc.py': 'def add(a, b):\n    return a + b\n', 'tests/test_calc.py': 'from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n' });
      assert.equal(await sandbox.readFile('calc.py'), 'def add(a, b):\n    return a + b\n');
      const pytest = await sandbox.exec(['python3', '-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'tests'], { env: { PYTHONPATH: '/workspace' } });
      assert.equal(pytest.exitCode, 0, pytest.stdout + pytest.stderr);
      assert.match(pytest.stdout, /1 passed/);
      await assert.rejects(sandbox.readFiles(['nope.py']), /nope\.py/);
      await assert.rejects(sandbox.writeFiles({ '../etc/x': 'x' }), /outside/);
      await sandbox.writeFiles({ 'report.xml': '<r/>' }, '/tmp/reports');
      assert.deepEqual(await sandbox.readFiles(['report.xml'], '/tmp/reports'), { 'report.xml': '<r/>' });
    });

    it('runs a preloaded python command as a fresh python3 would run it', async () => {
      await sandbox.writeFiles({
        'tests/test_warm.py': 'import os\n\ndef test_env():\n    assert os.environ["GREETING"] == "hello"\n\ndef test_fails():\n    assert 1 == 2\n',
        'tools/show.py': 'import os, sys\nprint(sys.argv, sys.path[0], os.getcwd(), __name__, "pytest" in sys.modules)\nsys.exit(int(sys.argv[1]))\n',
      });
      const env = { GREETING: 'hello' };
      for (const command of [['python3', '-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'tests'], ['python3', 'tools/show.py', '3']]) {
        const cold = await sandbox.exec(command, { env });
        for (let round = 0; round < 2; round++) {
          const warm = await sandbox.exec(command, { env, preload: ['pytest'] });
          // Only the timing in pytest's summary line may differ; a script sees pytest already imported.
          const comparable = (text: string) => text.replace(/ in [0-9.]+s/, ' in Ns').replace(/ (True|False)$/m, '');
          assert.deepEqual({ ...warm, durationMs: 0, stdout: comparable(warm.stdout) }, { ...cold, durationMs: 0, stdout: comparable(cold.stdout) }, command.join(' '));
        }
      }
      assert.match((await sandbox.exec(['python3', 'tools/show.py', '0'], { preload: ['pytest'] })).stdout, /'tools\/show\.py', '0'\] \/workspace\/tools \/workspace __main__ True/);
      // Anything but `python3 -m ...` or `python3 script` starts fresh, preload or not.
      const other = await sandbox.exec(['python3', '-c', 'import sys; print("pytest" in sys.modules)'], { preload: ['pytest'] });
      assert.equal(other.stdout, 'False\n');
    });

    it('kills a preloaded command with its tree on timeout; a warm interpreter killed from inside is replaced', async () => {
      const marker = uniqueMarker();
      await sandbox.writeFiles({ 'tools/hang.py': `import os, time\nos.system("setsid sleep ${marker} &")\ntime.sleep(${marker})\n` });
      const hung = await sandbox.exec(['python3', 'tools/hang.py'], { timeoutMs: 1000, preload: ['pytest'] });
      assert.equal(hung.status, 'timeout');
      assert.deepEqual(hostProcessesWith(`sleep\0${marker}`), []);
      // The command's parent is its shepherd, whose parent is the warm interpreter.
      await sandbox.writeFiles({ 'tools/kill_zygote.py': 'import os, signal\nshepherd = os.getppid()\nwith open("/proc/%d/stat" % shepherd) as f:\n    zygote = int(f.read().rsplit(")", 1)[1].split()[1])\nos.kill(zygote, signal.SIGKILL)\nprint("killed")\n' });
      const killer = await sandbox.exec(['python3', 'tools/kill_zygote.py'], { preload: ['pytest'] });
      assert.equal(killer.stdout, 'killed\n', killer.stderr);
      const after = await sandbox.exec(['python3', 'tools/show.py', '0'], { preload: ['pytest'] });
      assert.equal(after.exitCode, 0, after.stderr);
      assert.match(after.stdout, /__main__ True/);
    });

    it('reports a timeout as timeout and kills the whole process tree', async () => {
      const marker = uniqueMarker();
      const result = await sandbox.exec(['sh', '-c', `setsid sleep ${marker} & sleep ${marker}`], { timeoutMs: 500 });
      assert.equal(result.status, 'timeout');
      assert.equal(result.exitCode, null);
      assert.deepEqual(hostProcessesWith(`sleep\0${marker}`), []);
    });

    it('cancels a command when its AbortSignal fires', async () => {
      const marker = uniqueMarker();
      const controller = new AbortController();
      const running = sandbox.exec(['sleep', marker], { signal: controller.signal });
      await eventually('the command to run', async () => hostProcessesWith(`sleep\0${marker}`).length === 1, 30_000, 50);
      controller.abort();
      const result = await running;
      assert.equal(result.status, 'timeout');
      assert.deepEqual(hostProcessesWith(`sleep\0${marker}`), [], 'the cancelled command is gone');
    });

    it('caps each stream, keeping head and tail', async () => {
      const result = await sandbox.exec(['python3', '-c', 'print("begin"); print("x" * 1_000_000); print("end")'], { maxOutputBytes: 1000 });
      assert.equal(result.truncated, true);
      assert.ok(result.stdout.startsWith('begin') && result.stdout.endsWith('end\n'));
      assert.ok(result.stdout.length < 1100);
    });

    it('reports OOM as oom', async () => {
      const small = await pool.acquire({ image: sandboxImage(), runId: 'contract', taskId: 'contract-oom', limits: { memoryBytes: 96 * 1024 * 1024 } });
      try {
        const result = await small.exec(['python3', '-c', 'blocks = []\nwhile True: blocks.append(bytearray(8 * 1024 * 1024))'], { timeoutMs: 20_000 });
        assert.equal(result.status, 'oom', JSON.stringify(result));
        assert.equal((await small.exec(['echo', 'alive'])).stdout, 'alive\n', 'the sandbox survives the OOM kill of its command');
      } finally {
        await small.release();
      }
    });

    it('runs commands in one sandbox concurrently', async () => {
      // Each command waits until all three have started: run one after another, the first would time out.
      const tag = uniqueMarker();
      const results = await Promise.all([1, 2, 3].map((n) => sandbox.exec(['sh', '-c', rendezvous(tag, n, 3)], { timeoutMs: 60_000 })));
      assert.deepEqual(results.map((r) => `${r.status} ${r.stdout}`), ['exited 1\n', 'exited 2\n', 'exited 3\n']);
    });

    it('never hands a released sandbox out again; the next one starts clean', async () => {
      await sandbox.writeFiles({ 'left-behind.txt': 'secret' });
      const first = sandbox.id;
      await sandbox.release();
      await assert.rejects(sandbox.exec(['true']), /released/);
      sandbox = await acquire('contract-2');
      assert.notEqual(sandbox.id, first);
      const listing = await sandbox.exec(['ls', '-A', '/workspace', '/tmp']);
      assert.equal(listing.stdout, '/tmp:\n\n/workspace:\n');
    });

    it('fails commands with a retriable error when the sandbox dies under them', async () => {
      const doomed = await acquire('contract-doomed');
      // Caught at once: the rejection may land while the kill itself is still being awaited.
      const marker = uniqueMarker();
      const pending = doomed.exec(['sleep', marker]).then(
        () => null,
        (error: Error) => error,
      );
      await eventually('the command to run', async () => hostProcessesWith(`sleep\0${marker}`).length === 1, 30_000, 50);
      await killFromOutside(backend.name, doomed.id);
      const error = await pending;
      assert.ok(error && isRetriable(error) && /is gone/.test(error.message), String(error));
      await doomed.release();
    });
  });
}
