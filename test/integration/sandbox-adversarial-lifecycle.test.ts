import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { before, describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import Docker from 'dockerode';
import { DockerSandboxPool, dockerSandboxesOf, processSandboxesOf } from '../../connectors/sandbox/index.js';
import { retry, type RawRecord } from '../../pipelines/runtime/index.js';
import { SandboxError } from '../../schemas/index.js';
import { dockerComponent } from '../../stack/docker.js';
import { ensureStack, eventually } from './harness.js';
import { BACKENDS, hostProcessesWith, sandboxImage, uniqueMarker } from './sandbox-backends.js';

// The adversarial suite's lifecycle cases: churn, a killed executor, a restarted engine. The churn case runs the
// full 1000 cycles on each backend (a few minutes for Docker on 2 cores): leaks show up only at volume.
const CYCLES = { docker: 1000, process: 1000 } as const;
const MiB = 1024 * 1024;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapUsed = (): number => {
  gc();
  return process.memoryUsage().heapUsed;
};

describe('sandbox lifecycle under churn and failure', () => {
  before(() => ensureStack());

  for (const backend of BACKENDS) {
    it(`${backend.name}: ${CYCLES[backend.name]} acquire/release cycles leak no sandbox and keep executor memory flat`, async () => {
      const pool = backend.pool({ warmSize: 4 });
      const cycles = CYCLES[backend.name];
      let baseline = 0;
      for (let i = 0; i < cycles; i++) {
        if (i === 10) baseline = heapUsed();
        const sandbox = await pool.acquire({ image: sandboxImage(), runId: 'churn', taskId: `churn-${i}` });
        if (i % 10 === 0) assert.equal((await sandbox.exec(['echo', String(i)])).stdout, `${i}\n`);
        await sandbox.release();
      }
      const grewBy = heapUsed() - baseline;
      await pool.close();
      assert.deepEqual(await pool.existingSandboxes(), [], 'every sandbox is gone after close');
      assert.ok(grewBy < 8 * MiB, `executor heap grew by ${(grewBy / MiB).toFixed(1)} MiB over ${cycles - 10} cycles`);
    });

    it(`${backend.name}: the sandboxes of an executor killed with SIGKILL are reaped by the next one to start`, async () => {
      const marker = uniqueMarker();
      const pool = backend.name === 'docker' ? 'DockerSandboxPool' : 'ProcessSandboxPool';
      const moduleUrl = new URL('../../connectors/sandbox/index.js', import.meta.url).href;
      const executor = spawn(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `import { ${pool} } from '${moduleUrl}';
           const pool = new ${pool}({ warmSize: 2 });
           const sandbox = await pool.acquire({ image: '${sandboxImage()}', runId: 'doomed', taskId: 'doomed' });
           void sandbox.exec(['sleep', '${marker}'], { timeoutMs: 600000 });
           while (pool.stats.ready < 2) await new Promise((r) => setTimeout(r, 50));
           console.log(pool.owner);
           setInterval(() => {}, 1000);`,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      const [owner] = (await createInterface({ input: executor.stdout! })[Symbol.asyncIterator]().next()).value.split('\n') as [string];
      const leftBehind = (): Promise<string[]> => (backend.name === 'docker' ? dockerSandboxesOf(new Docker(), owner) : Promise.resolve(processSandboxesOf(owner)));
      await eventually('the doomed command to run', async () => hostProcessesWith(`sleep\0${marker}`).length === 1, 30_000);
      assert.equal((await leftBehind()).length, 3, 'one held and two warm sandboxes');

      executor.kill('SIGKILL');
      await new Promise((resolve) => executor.on('exit', resolve));
      if (backend.name === 'docker') {
        assert.equal((await leftBehind()).length, 3, 'containers outlive a killed executor');
      } else {
        // bwrap --die-with-parent: the sandboxes die with the executor; only their cgroups are left.
        await eventually('the sandbox processes to die with their executor', async () => hostProcessesWith(`sleep\0${marker}`).length === 0, 10_000);
      }

      const next = backend.pool({ warmSize: 0 });
      try {
        await eventually('the next executor to reap them', async () => (await leftBehind()).length === 0, 60_000);
        assert.deepEqual(hostProcessesWith(`sleep\0${marker}`), []);
      } finally {
        await next.close();
      }
    });
  }

  it('docker: dockerd restarted mid-run: the pool recovers and the affected tasks are retried, not lost', async () => {
    const engine = dockerComponent();
    const log = (line: string): void => console.log(`# [docker] ${line}`);
    const pool = new DockerSandboxPool({ warmSize: 2 });
    const attempts = new Map<number, number>();
    const marker = `restart-${uniqueMarker()}`;
    const outputs = new Map<number, string>();
    // Tasks go through the runtime's own retry middleware, exactly as a stream processor's handler would.
    const handler = retry({ retries: 10, initialDelayMs: 500, maxDelayMs: 5_000 })(async ({ record }) => {
      const task = Number(record.key);
      attempts.set(task, (attempts.get(task) ?? 0) + 1);
      const sandbox = await pool.acquire({ image: sandboxImage(), runId: 'restart', taskId: `restart-${task}` });
      try {
        // Long enough to outlast dockerd's stop grace (StopTimeout 1 s): a task in flight at the restart dies.
        const result = await sandbox.exec(['sh', '-c', `sleep 4; echo task-${task}`, marker], { timeoutMs: 30_000 });
        if (result.exitCode !== 0) throw new SandboxError(`task ${task} ended with ${result.status} ${String(result.exitCode)}`, { retriable: true });
        outputs.set(task, result.stdout);
      } finally {
        await sandbox.release();
      }
      return [];
    });
    const record = (task: number): RawRecord => ({ topic: 't', topicKey: 'tasks', partition: 0, offset: String(task), headers: {}, timestamp: '0', key: Buffer.from(String(task)), value: null });

    const tasks = [...Array(8).keys()];
    const queue = [...tasks];
    const signal = new AbortController().signal;
    const workers = [1, 2].map(async () => {
      for (let task = queue.shift(); task !== undefined; task = queue.shift()) await handler({ record: record(task), signal });
    });
    // Restart once a task of the second round is mid-command (seen on the host), so that one surely dies.
    await eventually('a second-round task to be mid-command', async () => attempts.size >= 3 && hostProcessesWith(marker).length > 0, 120_000, 50);
    const stopped = await engine.stop(log);
    assert.equal(stopped, 'stopped', 'the test restarts the dockerd that `trialrun stack up` started; this one is not ours');
    await engine.ensure(log);
    await Promise.all(workers);

    assert.deepEqual(
      tasks.map((task) => outputs.get(task)),
      tasks.map((task) => `task-${task}\n`),
      'every task finished',
    );
    assert.ok([...attempts.values()].some((n) => n > 1), `some task was retried (attempts: ${JSON.stringify([...attempts])})`);
    await pool.close();
    assert.deepEqual(await pool.existingSandboxes(), [], 'no container leaked across the restart');
  });
});

