import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { SandboxError } from '../../schemas/index.js';
import { AGENT_PROTOCOL, AgentChannel } from './agent-channel.js';
import type { SandboxHandle } from './agent-sandbox.js';
import { AgentSandboxPool, resolvePoolOptions, type SandboxBackend, type StartSpec } from './pool.js';

/** A backend whose sandboxes are channels to nobody: enough to see what they were started for and told. */
class FakeBackend implements SandboxBackend {
  readonly owner = 'test-owner';
  readonly started: StartSpec[] = [];
  readonly assigned: string[] = [];
  readonly channels: AgentChannel[] = [];

  async start(spec: StartSpec): Promise<SandboxHandle> {
    this.started.push(spec);
    const output = new PassThrough();
    const channel = new AgentChannel(new PassThrough(), output, `fake-${this.started.length}`);
    output.write(`${JSON.stringify({ event: 'ready', protocol: AGENT_PROTOCOL })}\n`);
    await channel.ready;
    this.channels.push(channel);
    return {
      id: `fake-${this.started.length}`,
      imageDigest: 'sha256:none',
      channel,
      assign: async (taskId) => void this.assigned.push(taskId),
      diagnose: async () => null,
      destroy: async () => channel.close('it was released'),
    };
  }

  async reap() {
    return { removed: [], unknownOwner: [] };
  }

  async existing(): Promise<string[]> {
    return [];
  }

  async removeAll(): Promise<string[]> {
    return [];
  }

  async reachable(): Promise<boolean> {
    return true;
  }
}

test('a warm sandbox starts with no task and, once acquired, names the task that holds it', async () => {
  const backend = new FakeBackend();
  const pool = new AgentSandboxPool(backend, resolvePoolOptions({ warmSize: 1, reapIntervalMs: 0 }, 'test'));
  try {
    const first = await pool.acquire({ image: 'img', runId: 'run', taskId: 'task-A' });
    assert.equal(backend.started[0]!.taskId, 'task-A', 'a cold start knows its task');
    for (let i = 0; i < 50 && backend.started.length < 2; i++) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(backend.started[1]?.taskId, '', 'the warm refill is started for no task, not for task-A');

    const second = await pool.acquire({ image: 'img', runId: 'run', taskId: 'task-B' });
    assert.equal(second.id, 'fake-2', 'task-B got the warm sandbox');
    assert.deepEqual(backend.assigned.slice(0, 2), ['task-A', 'task-B']);
    const pending = second.exec(['sleep', '30']);
    backend.channels[1]!.close('the engine went away');
    await assert.rejects(pending, (error: unknown) => error instanceof SandboxError && /^sandbox fake-2 \(task task-B\) is gone/.test(error.message));
    await second.release();
    await assert.rejects(second.exec(['true']), /sandbox fake-2 \(task task-B\) was released/);
    await first.release();
  } finally {
    await pool.close();
  }
});

test('the lease budget: an acquire past maxSandboxes waits for a release, and an aborted wait takes no lease', async () => {
  const backend = new FakeBackend();
  const pool = new AgentSandboxPool(backend, resolvePoolOptions({ warmSize: 0, reapIntervalMs: 0, maxSandboxes: 2 }, 'test'));
  try {
    const first = await pool.acquire({ image: 'img', runId: 'run', taskId: 'rollout-1' });
    const second = await pool.acquire({ image: 'img', runId: 'run', taskId: 'grading-1' });
    assert.equal(pool.stats.leasesFree, 0);
    let third: Awaited<ReturnType<typeof pool.acquire>> | null = null;
    const waiting = pool.acquire({ image: 'img', runId: 'run', taskId: 'rollout-2' }).then((sandbox) => (third = sandbox));
    const stop = new AbortController();
    const abandoned = pool.acquire({ image: 'img', runId: 'run', taskId: 'rollout-3', signal: stop.signal });
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(third, null, 'no third sandbox while two are held');
    assert.equal(pool.stats.waitingForLease, 2);
    assert.equal(backend.started.length, 2, 'nothing is started for a waiter');
    stop.abort();
    await assert.rejects(abandoned, /cancelled/);
    await first.release();
    await waiting;
    assert.ok(third, 'the release handed its lease to the waiter');
    assert.equal(pool.stats.held, 2);
    await second.release();
    await (third as unknown as { release(): Promise<void> }).release();
    assert.equal(pool.stats.leasesFree, 2);
  } finally {
    await pool.close();
  }
  assert.throws(() => resolvePoolOptions({ maxSandboxes: 0 }, 'PoolOptions'), /PoolOptions.maxSandboxes must be a whole number/);
});

test('an acquire whose sandbox was still starting when the pool closed fails, and its sandbox is destroyed', async () => {
  let open = (): void => undefined;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const backend = new FakeBackend();
  const start = backend.start.bind(backend);
  backend.start = async (spec) => {
    await gate;
    return start(spec);
  };
  const pool = new AgentSandboxPool(backend, resolvePoolOptions({ warmSize: 0, reapIntervalMs: 0 }, 'test'));
  const acquiring = pool.acquire({ image: 'img', runId: 'run', taskId: 'late' });
  for (let i = 0; i < 20 && pool.stats.pending === 0; i++) await new Promise((resolve) => setImmediate(resolve));
  const closing = pool.close();
  open();
  await closing;
  await assert.rejects(acquiring, /the sandbox pool is closed/);
  assert.equal(backend.channels.length, 1);
  assert.ok(backend.channels[0]!.closed, 'the sandbox started for it was destroyed');
  assert.equal(pool.stats.held, 0);
});
