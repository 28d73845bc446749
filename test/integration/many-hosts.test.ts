/**
 * Two hosts on one machine: two Docker engines (`stack up --engines 2`), each with its own rollout worker and
 * verifier as separate processes (`trialrun run ...` with DOCKER_HOST), both workers in one consumer group and
 * both verifiers in another; reward runs here. One test SIGKILLs a rollout worker mid-episode, the other kills a
 * whole engine (its dockerd and containerd) mid-episode and keeps it down until the other host has done every
 * task: the processes on the dead engine leave their groups (ProcessorOptions.hostAvailable), and rejoin once it
 * is back. Either way every task ends with exactly one trajectory per sample and one verification and one
 * reward per trajectory (counted in Kafka once every group has committed past its input), nothing is
 * dead-lettered, and no container is left on either engine: the dead worker's containers are reaped by the
 * surviving process on its engine (the pool's reaper removes containers whose owner process is gone), those of
 * the killed engine by their own pools once it is back.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import Docker from 'dockerode';
import { repoRoot } from '../../cli/paths.js';
import { prepareTasks, publishTasks } from '../../pipelines/jobs/task-job/index.js';
import { createRewardProcessor } from '../../pipelines/reward/index.js';
import type { ProcessorContext } from '../../pipelines/runtime/index.js';
import type { Task, TopicValue } from '../../schemas/index.js';
import { childExit, enginePaths, extraEngineComponent, extraEngineComponents, stackComponents, stackPaths, stackUp, stopChild } from '../../stack/index.js';
import { committedPastEnd, eventually, freshContext, readAll, tempDir } from './harness.js';

const HOSTS = { a: 'unix:///var/run/docker.sock', b: enginePaths(2).host } as const;
type Host = keyof typeof HOSTS;
const engines: Record<Host, Docker> = { a: new Docker({ socketPath: HOSTS.a.slice('unix://'.length) }), b: new Docker({ socketPath: HOSTS.b.slice('unix://'.length) }) };
const GROUP_SIZE = 2;
const TASKS = 6;
const children = new Set<ChildProcess>();
/** Everything each child wrote to stderr so far. */
const stderrOf = new Map<ChildProcess, string>();

before(() => stackUp((line) => console.log(`# ${line}`), [...stackComponents(), ...extraEngineComponents(2)]), { timeout: 900_000 });
after(async () => {
  for (const child of children) child.kill('SIGKILL');
});

/** Tasks whose visible tests take a few seconds, so that a kill lands while episodes run. */
async function slowTasks(): Promise<Task[]> {
  const tasks = (await prepareTasks({ file: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'), rejectsDir: tempDir('many-hosts') })).tasks.slice(0, TASKS);
  return tasks.map((task) => ({ ...task, visibleTests: { ...task.visibleTests, 'test_takes_its_time.py': 'import time\n\n\ndef test_takes_its_time():\n    time.sleep(3)\n' } }));
}

/**
 * One processor as its own process on one host's engine, on the test's topics; resolves once it runs. They start
 * one at a time: on a loaded machine four at once can miss the command's bounded broker check.
 */
async function startProcess(processor: 'rollout-worker' | 'verifier', host: Host, prefix: string, runId: string): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [join(repoRoot(), 'bin', 'trialrun.js'), 'run', processor, '--instance', host, '--run-id', runId, '--group-size', String(GROUP_SIZE), '--session-timeout-ms', '10000'],
    { env: { ...process.env, TRIALRUN_TOPIC_PREFIX: prefix, DOCKER_HOST: HOSTS[host] }, stdio: ['ignore', 'inherit', 'pipe'] },
  );
  children.add(child);
  child.once('exit', () => children.delete(child));
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      stderrOf.set(child, (stderrOf.get(child) ?? '') + chunk.toString());
      process.stderr.write(`# ${processor} ${host}: ${chunk.toString()}`);
      if (chunk.toString().includes(`running (instance ${host})`)) resolve();
    });
    child.once('exit', (code, signal) => reject(new Error(`${processor} ${host} exited (${code ?? signal}) before it ran`)));
  });
  return child;
}


/** This run's containers on one engine (any state), with their owner label's pid. */
async function containersOf(host: Host, runId: string): Promise<Array<{ id: string; name: string; pid: number; running: boolean }>> {
  const list = await engines[host].listContainers({ all: true, filters: { label: [`trialrun.run-id=${runId}`] } });
  return list.map((c) => ({ id: c.Id, name: (c.Names[0] ?? '').replace(/^\//, ''), pid: Number((c.Labels['trialrun.owner'] ?? '').split(':')[1]), running: c.State === 'running' }));
}

/** The sandboxes `pid` runs episodes in on `host`: running ones of its own that a task was assigned to (not warm ones). */
async function episodeSandboxes(host: Host, runId: string, pid: number): Promise<Array<{ name: string }>> {
  return (await containersOf(host, runId)).filter((c) => c.pid === pid && c.running && !c.name.startsWith('trialrun-warm-'));
}

/** True while `pid` runs an episode on `host`. */
async function midEpisode(host: Host, runId: string, pid: number): Promise<boolean> {
  return (await episodeSandboxes(host, runId, pid)).length > 0;
}

interface Hosts {
  context: ProcessorContext;
  runId: string;
  tasks: Task[];
  workers: Record<Host, ChildProcess>;
  verifiers: Record<Host, ChildProcess>;
  stopReward: () => Promise<void>;
}

async function startHosts(label: string): Promise<Hosts> {
  const context = await freshContext(label);
  const runId = `${label}-${Date.now()}`;
  const tasks = await slowTasks();
  const reward = createRewardProcessor(context, {});
  await reward.start();
  const prefix = context.names.prefix;
  const workers = { a: await startProcess('rollout-worker', 'a', prefix, runId), b: await startProcess('rollout-worker', 'b', prefix, runId) };
  const verifiers = { a: await startProcess('verifier', 'a', prefix, runId), b: await startProcess('verifier', 'b', prefix, runId) };
  await publishTasks(context.kafka, context.serde, context.names, tasks);
  return { context, runId, tasks, workers, verifiers, stopReward: () => reward.stop() };
}

/** Exactly one trajectory per sample, one verification and one reward per trajectory, no dead letter: counted in Kafka. */
async function assertExactAccounting({ context, tasks }: Hosts): Promise<Record<string, number>> {
  const samples = tasks.length * GROUP_SIZE;
  await eventually('every sample rewarded', async () => (await readAll(context, 'rewards')).length >= samples, 900_000, 2000);
  // Past every input, in every group: a duplicate from a redone task would be visible now.
  for (const [group, input] of [['rollout-worker', 'tasks'], ['verifier', 'trajectories'], ['reward', 'verifications']] as const) {
    await eventually(`${group} to commit past its input`, () => committedPastEnd(context, `${context.names.prefix}${group}`, input), 300_000, 1000);
  }
  // One read of all four topics that sees every sample: on a loaded machine a read to the end has come back short.
  let read: [TopicValue<'trajectories'>[], TopicValue<'verifications'>[], TopicValue<'rewards'>[], TopicValue<'deadLetters'>[]] = [[], [], [], []];
  await eventually('a read that sees every sample', async () => {
    read = await Promise.all([readAll(context, 'trajectories'), readAll(context, 'verifications'), readAll(context, 'rewards'), readAll(context, 'deadLetters')]);
    return read.slice(0, 3).every((records) => records.length >= samples);
  }, 300_000, 2000);
  const [trajectories, verifications, rewards, deadLetters] = read;
  assert.deepEqual(deadLetters.map((d) => d.error), [], 'nothing dead-lettered');
  assert.equal(trajectories.length, samples, 'one trajectory per sample');
  const perTask = new Map<string, number>();
  for (const t of trajectories) perTask.set(t.lineage.taskId, (perTask.get(t.lineage.taskId) ?? 0) + 1);
  assert.deepEqual([...perTask.values()], tasks.map(() => GROUP_SIZE), 'G trajectories for every task');
  const ids = trajectories.map((t) => t.trajectoryId).sort();
  assert.equal(new Set(ids).size, ids.length, 'no trajectory twice');
  assert.deepEqual(verifications.map((v) => v.trajectoryId).sort(), ids, 'one verification per trajectory');
  assert.deepEqual(rewards.map((r) => r.trajectoryId).sort(), ids, 'one reward per trajectory');
  return { tasks: tasks.length, trajectories: trajectories.length, verifications: verifications.length, rewards: rewards.length, deadLetters: deadLetters.length };
}

/** Stops every process gracefully, then checks that neither engine keeps a container of the run. */
async function stopAndAssertNoLeaks(hosts: Hosts): Promise<void> {
  // Graceful, so each releases its sandboxes (bounded: stopChild answers at once for one that already exited).
  await Promise.all([...Object.values(hosts.workers), ...Object.values(hosts.verifiers)].map((child) => stopChild(child, { graceMs: 120_000 })));
  await hosts.stopReward();
  for (const host of ['a', 'b'] as const) {
    await eventually(`no container of the run left on engine ${host}`, async () => (await containersOf(host, hosts.runId)).length === 0, 120_000, 1000);
  }
}

test('a rollout worker killed mid-episode: the other host redoes its tasks, accounting stays exact, its containers are reaped', { timeout: 1_500_000 }, async () => {
  const hosts = await startHosts('many-hosts-worker');
  try {
    const victim = hosts.workers.a;
    await eventually('worker a mid-episode', () => midEpisode('a', hosts.runId, victim.pid!), 600_000, 250);
    const left = (await containersOf('a', hosts.runId)).filter((c) => c.pid === victim.pid);
    victim.kill('SIGKILL');
    await childExit(victim);
    console.log(`# killed worker a (pid ${victim.pid}) with ${left.length} containers of its own on engine a`);

    const counts = await assertExactAccounting(hosts);
    console.log(`# counts: ${JSON.stringify(counts)}`);
    // Worker a's sandboxes are the surviving verifier's to reap on engine a: their owner process is gone.
    await eventually('the dead worker\'s containers reaped on engine a', async () => !(await containersOf('a', hosts.runId)).some((c) => c.pid === victim.pid), 180_000, 1000);
    await stopAndAssertNoLeaks(hosts);
  } finally {
    for (const child of [...Object.values(hosts.workers), ...Object.values(hosts.verifiers)]) child.kill('SIGKILL');
    // The in-process reward's consumer would keep this file's process alive after a failure (stopping twice is harmless).
    await hosts.stopReward();
  }
});

test('a whole engine killed mid-episode: its worker and verifier leave their groups, the other host does every task, accounting stays exact, no container is left once it is back', { timeout: 1_500_000 }, async () => {
  const hosts = await startHosts('many-hosts-engine');
  try {
    const { workers, verifiers, tasks, context } = hosts;
    await eventually('worker b mid-episode', () => midEpisode('b', hosts.runId, workers.b.pid!), 600_000, 250);
    // The tasks of the sandboxes b runs episodes in (container names carry the task id, see containerName).
    const onB = (await episodeSandboxes('b', hosts.runId, workers.b.pid!)).map((c) => c.name);
    // dockerd leads its own process group (stack/process.ts), containerd with it: the engine dies at once.
    const dockerd = Number(readFileSync(join(stackPaths().stateDir, 'run', `${enginePaths(2).daemon}.pid`), 'utf8').trim());
    process.kill(-dockerd, 'SIGKILL');
    console.log(`# killed engine b (dockerd pid ${dockerd}) with worker b in ${onB.join(', ')}`);
    await eventually('engine b gone', async () => !(await engines.b.ping().then(() => true, () => false)), 30_000, 200);
    const inFlight = tasks.filter((task) => onB.some((name) => name.startsWith(`trialrun-${task.taskId.replace(/[^a-zA-Z0-9_.-]+/g, '-')}-`)));
    assert.ok(inFlight.length > 0, `the sandboxes on b (${onB.join(', ')}) name a task of the run`);
    // What was committed when b died: a task in flight has no trajectory yet (its G commit with its offset at once).
    const before = new Set((await readAll(context, 'trajectories')).map((t) => t.lineage.taskId));
    const redone = inFlight.filter((task) => !before.has(task.taskId));
    assert.ok(redone.length > 0, 'a task in flight on b was not committed yet');
    await eventually('worker b to leave its group', async () => (stderrOf.get(workers.b) ?? '').includes('leaving the group until the host answers'), 120_000, 500);

    // Engine b stays down: every task is rolled out, verified and rewarded by host a alone.
    const counts = await assertExactAccounting(hosts);
    console.log(`# counts: ${JSON.stringify(counts)}`);
    assert.equal(await engines.b.ping().then(() => true, () => false), false, 'engine b stayed down while host a did the work');
    const trajectories = await readAll(context, 'trajectories');
    for (const task of redone) assert.equal(trajectories.filter((t) => t.lineage.taskId === task.taskId).length, GROUP_SIZE, `task ${task.taskId}, in flight on b, rolled out by a`);
    const verifications = new Set((await readAll(context, 'verifications')).map((v) => v.trajectoryId));
    for (const t of trajectories.filter((t) => redone.some((task) => task.taskId === t.lineage.taskId))) assert.ok(verifications.has(t.trajectoryId), `${t.trajectoryId} verified`);
    for (const child of [workers.b, verifiers.b]) assert.equal(child.exitCode, null, 'the processes on b outlive their engine');

    await extraEngineComponent({ index: 2 }).ensure((line) => console.log(`# ${line}`));
    await eventually('worker b to rejoin', async () => (stderrOf.get(workers.b) ?? '').includes('rejoining the group'), 120_000, 500);
    if ((stderrOf.get(verifiers.b) ?? '').includes('leaving the group until the host answers')) {
      await eventually('verifier b to rejoin', async () => (stderrOf.get(verifiers.b) ?? '').includes('rejoining the group'), 120_000, 500);
    }
    // b's containers died with its engine and their removal gave up: its own pools' reapers remove them now.
    await eventually('the dead engine\'s containers reaped on engine b', async () => (await containersOf('b', hosts.runId)).every((c) => c.running || c.name.startsWith('trialrun-warm-')), 240_000, 1000);
    await stopAndAssertNoLeaks(hosts);
  } finally {
    for (const child of [...Object.values(hosts.workers), ...Object.values(hosts.verifiers)]) child.kill('SIGKILL');
    // The in-process reward's consumer would keep this file's process alive after a failure (stopping twice is harmless).
    await hosts.stopReward();
  }
});
