import assert from 'node:assert/strict';
import { Duplex, type Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type Docker from 'dockerode';
import { AGENT_PROTOCOL } from './agent-channel.js';
import { AGENT_LABEL, DockerSandboxPool, LABELS } from './docker.js';

interface FakeContainer {
  readonly id: string;
  name: string;
  readonly labels: Record<string, string>;
  removed: boolean;
}

/**
 * Just enough of the Docker engine for the pool: containers whose agent says it is ready on start, and a log of
 * the calls that matter. `renameGate` holds every rename until it resolves.
 */
function fakeEngine(options: { renameGate?: Promise<void>; loseCreateAnswers?: number; removeFailures?: Error[] } = {}) {
  const containers: FakeContainer[] = [];
  const log: string[] = [];
  let renaming = 0;
  let lose = options.loseCreateAnswers ?? 0;
  const gone = (id: string): Error => Object.assign(new Error(`(HTTP code 404) no such container - No such container: ${id}`), { statusCode: 404 });
  const find = (idOrName: string): FakeContainer | undefined => containers.find((c) => !c.removed && (c.id === idOrName || c.name === idOrName));
  const handle = (idOrName: string) => ({
    get id() {
      return find(idOrName)?.id ?? idOrName;
    },
    async attach() {
      const stream = new Duplex({ read() {}, write: (_chunk, _encoding, done) => done() });
      streams.set(idOrName, stream);
      return stream;
    },
    async start() {
      streams.get(idOrName)!.push(`${JSON.stringify({ event: 'ready', protocol: AGENT_PROTOCOL })}\n`);
    },
    async rename({ name }: { name: string }) {
      const container = find(idOrName);
      if (!container) throw gone(idOrName);
      renaming++;
      log.push(`rename ${container.id}`);
      await options.renameGate;
      container.name = name;
      renaming--;
    },
    async remove() {
      const container = find(idOrName);
      if (!container) throw gone(idOrName);
      // A forced removal while a rename of the same container is in flight is what leaves one listed in a real engine.
      log.push(`remove ${container.id}${renaming > 0 ? ' DURING A RENAME' : ''}`);
      await sleep(1);
      const failure = options.removeFailures?.shift();
      if (failure) throw failure;
      container.removed = true;
    },
    async inspect() {
      return { State: { OOMKilled: false } };
    },
  });
  const streams = new Map<string, Duplex>();
  const docker = {
    modem: { demuxStream: (stream: Duplex, stdout: Writable) => stream.on('data', (chunk: Buffer) => stdout.write(chunk)) },
    getImage: () => ({ inspect: async () => ({ Id: 'sha256:fake', Config: { Labels: { [AGENT_LABEL]: '["agent"]' } } }) }),
    async createContainer(spec: { name: string; Labels: Record<string, string> }) {
      const container = { id: `c${containers.length}`, name: spec.name, labels: spec.Labels, removed: false };
      containers.push(container);
      if (lose > 0) {
        lose--;
        throw new Error('socket hang up');
      }
      return handle(container.id);
    },
    getContainer: (idOrName: string) => handle(idOrName),
    async listContainers() {
      return containers.filter((c) => !c.removed).map((c) => ({ Id: c.id, Labels: c.labels, Created: Math.floor(Date.now() / 1000) }));
    },
    async ping() {
      return 'OK';
    },
  };
  return { docker: docker as unknown as Docker, containers, log };
}

async function until(what: string, probe: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

describe('DockerSandboxPool against a fake engine', () => {
  it('never removes a container while its rename is in flight, and leaves nothing after close', async () => {
    let open = (): void => undefined;
    const renameGate = new Promise<void>((resolve) => (open = resolve));
    const engine = fakeEngine({ renameGate });
    const pool = new DockerSandboxPool({ docker: engine.docker, warmSize: 1, reapIntervalMs: 0 });
    await (await pool.acquire({ image: 'img', runId: 'run', taskId: 'cold' })).release();
    await until('a warm container', () => pool.stats.ready === 1);
    // The warm container started for no task, so acquiring it renames it; it is released at once, as in churn.
    const warm = await pool.acquire({ image: 'img', runId: 'run', taskId: 'warm' });
    await until('the rename to be in flight', () => engine.log.some((line) => line === `rename ${warm.id}`));
    await warm.release();
    await sleep(50);
    assert.ok(!engine.log.includes(`remove ${warm.id}`), 'the removal waits for the rename in flight');
    open();
    await pool.close();
    assert.deepEqual(
      engine.log.filter((line) => line.includes('DURING')),
      [],
    );
    assert.deepEqual(await pool.existingSandboxes(), []);
  });

  it('removes by name a container the engine made although its answer was lost', async () => {
    const engine = fakeEngine({ loseCreateAnswers: 1 });
    const pool = new DockerSandboxPool({ docker: engine.docker, warmSize: 0, reapIntervalMs: 0 });
    await assert.rejects(pool.acquire({ image: 'img', runId: 'run', taskId: 'lost' }), /socket hang up/);
    assert.equal(engine.containers.length, 1);
    assert.deepEqual(await pool.existingSandboxes(), [], 'the container was made and is gone again');
    await pool.close();
    assert.equal(engine.containers[0]!.labels[LABELS.taskId], 'lost');
  });

  it('retries a removal while the engine is away or another removal runs, and an engine failure 3 times only', async () => {
    const failure = (message: string, statusCode?: number): Error => Object.assign(new Error(message), { statusCode });
    const inProgress = failure('(HTTP code 409) removal of container c0 is already in progress', 409);
    const engine = fakeEngine({ removeFailures: [failure('connect ECONNREFUSED /var/run/docker.sock'), inProgress, failure('(HTTP code 500) server error', 500)] });
    const pool = new DockerSandboxPool({ docker: engine.docker, warmSize: 0, reapIntervalMs: 0 });
    // Released sandboxes are removed in the background.
    await (await pool.acquire({ image: 'img', runId: 'run', taskId: 'away' })).release();
    await until('the removal', () => engine.containers[0]!.removed, 10_000);
    assert.equal(engine.log.filter((line) => line.startsWith('remove')).length, 4);

    const broken = fakeEngine({ removeFailures: Array.from({ length: 5 }, () => failure('(HTTP code 500) server error', 500)) });
    const other = new DockerSandboxPool({ docker: broken.docker, warmSize: 0, reapIntervalMs: 0 });
    await (await other.acquire({ image: 'img', runId: 'run', taskId: 'broken' })).release();
    const removals = (): number => broken.log.filter((line) => line.startsWith('remove')).length;
    await until('the first try and 3 retries', () => removals() === 4, 10_000);
    // A 4th retry would come at least 1 s after the 4th try.
    await sleep(1_200);
    assert.equal(removals(), 4);
    assert.equal(broken.containers[0]!.removed, false);
    await pool.close();
    await other.close();
  });
});
