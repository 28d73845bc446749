/**
 * Issue 42, "Hosts that share nothing": a loop split over two hosts that share only Kafka, the registry and S3.
 *
 * Host A is this machine: the learner, reward and the analytics sink run here as `trialrun run` processes, each with
 * a fresh state and data folder of its own, checkpoints, claim-checked task trees and the lake on `s3://`.
 *
 * Host B is a mount and UTS namespace that bubblewrap makes (on this machine's network, so 127.0.0.1 reaches Kafka,
 * the registry and S3): its root is a folder of its own (its "disk", which outlives its processes), with this
 * machine's Debian /usr and /etc and the built checkout bound read-only, and nothing else of host A. In particular
 * neither the stack's state folder nor host A's folders exist there, and it has no Docker engine, so its rollout
 * worker and verifier run sandboxes with `--sandbox process` (bubblewrap inside the host): the python-repair image's
 * root file system is exported once by host A's engine onto host B's disk (what `trialrun sandbox rootfs` prints to
 * copy). Docker inside the host would need a nested engine, its own images and a privileged parent: bubblewrap needs
 * only the binary in /usr.
 *
 * One loop, two phases. First every task is rolled out on B, verified on B, rewarded and learnt on A: exact counts by
 * id, B plays a version > 0 (loaded from S3 by its sha256), resolves claim-checked trees from S3, and `trialrun sql`
 * with a third, empty state and data folder answers from the lake on S3. Then B's processes are SIGKILLed mid-wave
 * and restarted (its disk kept), and the S3 server, this test's own so that stopping it disturbs nobody, is stopped
 * for a while under load: still one trajectory per sample, one verification and one reward per trajectory, each
 * checkpoint version once, nothing dead-lettered, and the lake holds each row once.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import Docker from 'dockerode';
import { repoRoot } from '../../cli/paths.js';
import { BlobTreeStore, storeLargeTrees } from '../../connectors/artifacts/index.js';
import { ensureBubblewrap, newOwner, RootfsStore } from '../../connectors/sandbox/index.js';
import { S3BlobStore, type S3StoreOptions } from '../../connectors/storage/index.js';
import { prepareTasks, publishTasks } from '../../pipelines/jobs/task-job/index.js';
import type { ProcessorContext } from '../../pipelines/runtime/index.js';
import { STACK_S3_ACCESS_KEY_ID, STACK_S3_SECRET_ACCESS_KEY, type Task, type TopicValue } from '../../schemas/index.js';
import { childExit, imageFor, s3Component, stackPaths, stopChild } from '../../stack/index.js';
import { committedPastEnd, ensureStack, eventually, freshContext, readAll, runCli, tempDir } from './harness.js';

const S3_URL = 'http://127.0.0.1:8437';
const server = s3Component({ name: 'two-hosts-it', url: S3_URL, external: false, ports: { master: 9537, volume: 9544, filer: 8992 } });
const s3: S3StoreOptions = { endpoint: S3_URL, accessKeyId: STACK_S3_ACCESS_KEY_ID, secretAccessKey: STACK_S3_SECRET_ACCESS_KEY };
const log = (line: string): void => console.log(`# ${line}`);
const GROUP_SIZE = 2;
/** A group whose two samples disagree is a batch: a checkpoint. */
const BATCH_SIZE = 2;
const WAVE = 3;
/** Where host B keeps its state: a folder on its own disk (the checkout, bound read-only, has no room for it). */
const HOST_B_STATE = '/var/lib/trialrun';

/** Everything started, so that a failure leaves no process behind. */
const started = new Set<ChildProcess>();
const stderrOf = new Map<ChildProcess, string>();

before(async () => {
  await ensureStack();
  await server.ensure(log);
  await ensureBubblewrap(log);
}, { timeout: 900_000 });
after(async () => {
  for (const child of started) for (const pid of [...descendants(child.pid!), child.pid!]) signal(pid, 'SIGKILL');
  await server.stop(log);
  rmSync(join(stackPaths().stateDir, 'two-hosts-it'), { recursive: true, force: true });
});

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Already gone.
  }
}

/** Every live descendant of `pid`, parents before children (from /proc: host B's processes have no group of their own). */
function descendants(pid: number): number[] {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const children = tasks.flatMap((task) => {
    try {
      return readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(/\s+/).filter(Boolean).map(Number);
    } catch {
      return [];
    }
  });
  return children.flatMap((child) => [child, ...descendants(child)]);
}

/** Waits until a processor's child says it runs; its stderr goes to the test's output with `label`. */
function running(child: ChildProcess, label: string, instance: string): Promise<void> {
  started.add(child);
  child.once('exit', () => started.delete(child));
  return new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      stderrOf.set(child, (stderrOf.get(child) ?? '') + chunk.toString());
      process.stderr.write(`# ${label}: ${chunk.toString()}`);
      if (chunk.toString().includes(`running (instance ${instance})`)) resolve();
    });
    child.once('exit', (code, signal) => reject(new Error(`${label} exited (${code ?? signal}) before it ran: ${(stderrOf.get(child) ?? '').slice(-2000)}`)));
  });
}

/**
 * The second host: a root folder of its own, entered by every process it runs through bubblewrap (a mount and UTS
 * namespace; the network and process ids are this machine's, as for a container on the host network).
 */
class SecondHost {
  readonly root: string;
  private readonly processes = new Set<ChildProcess>();

  constructor(label: string, private readonly env: Record<string, string>) {
    this.root = join(tempDir(label), 'root');
    // A Debian root with merged /usr: the sandbox user must be able to walk it to the root file systems.
    for (const dir of ['', 'var/lib/trialrun', 'var/cache/trialrun/sandbox-rootfs', 'root', 'work']) mkdirSync(join(this.root, dir), { recursive: true, mode: 0o755 });
    chmodSync(this.root, 0o755);
    mkdirSync(join(this.root, 'tmp'), { mode: 0o1777 });
    chmodSync(join(this.root, 'tmp'), 0o1777);
    for (const dir of ['bin', 'sbin', 'lib', 'lib64']) symlinkSync(`usr/${dir}`, join(this.root, dir));
  }

  /** `command` on the host, as a process of this machine whose file system is the host's. */
  spawn(command: readonly string[]): ChildProcess {
    const checkout = repoRoot();
    // The checkout's node_modules may be a link to another checkout's: its target is bound where the link points.
    const modules = realpathSync(join(checkout, 'node_modules'));
    const child = spawn('bwrap', [
      '--bind', this.root, '/',
      '--ro-bind', '/usr', '/usr',
      '--ro-bind', '/etc', '/etc',
      '--ro-bind', checkout, checkout,
      // The code is shared, host A's state is not: a state folder inside the checkout is an empty one on host B.
      ...stateFoldersIn(checkout).flatMap((folder) => ['--tmpfs', folder]),
      ...(modules.startsWith(`${checkout}/`) ? [] : ['--ro-bind', modules, modules]),
      // This machine's /proc as it is (the process ids are shared): a fresh one that bubblewrap covers in part would
      // keep the sandboxes' own bubblewrap, in a user namespace, from mounting theirs.
      '--bind', '/proc', '/proc',
      '--dev', '/dev',
      // Its process sandboxes get cgroups of their own, as on any host.
      '--ro-bind', '/sys', '/sys',
      '--bind', '/sys/fs/cgroup', '/sys/fs/cgroup',
      '--unshare-uts', '--hostname', 'trialrun-host-b',
      // Root on its host: its sandboxes' bubblewrap mounts and switches users.
      '--cap-add', 'ALL',
      '--die-with-parent',
      '--chdir', checkout,
      '--', ...command,
    ], { env: this.env, stdio: ['ignore', 'inherit', 'pipe'] });
    this.processes.add(child);
    child.once('exit', () => this.processes.delete(child));
    return child;
  }

  /** Runs a command on the host to its end: its exit status. */
  async run(command: readonly string[]): Promise<number> {
    const child = this.spawn(command);
    child.stderr!.resume();
    return childExit(child);
  }

  /** `trialrun run <processor>` on the host; resolves once it runs. */
  async start(processor: 'rollout-worker' | 'verifier', runId: string): Promise<ChildProcess> {
    const child = this.spawn(['/usr/bin/node', join(repoRoot(), 'bin', 'trialrun.js'), 'run', processor, '--instance', 'b', '--run-id', runId, '--group-size', String(GROUP_SIZE), '--session-timeout-ms', '10000', '--sandbox', 'process']);
    await running(child, `host B ${processor}`, 'b');
    return child;
  }

  /** The host dies: SIGKILL to every one of its processes at once (each bubblewrap, its node, their sandboxes). */
  async crash(): Promise<number> {
    const children = [...this.processes];
    const pids = children.flatMap((child) => [child.pid!, ...descendants(child.pid!)]);
    for (const pid of pids) signal(pid, 'SIGKILL');
    await Promise.all(children.map((child) => childExit(child)));
    return pids.length;
  }

  /** SIGTERM to each processor (bubblewrap's child, the node process), then waits for it to stop. */
  async stop(): Promise<void> {
    const children = [...this.processes];
    for (const child of children) for (const pid of descendants(child.pid!).slice(0, 1)) signal(pid, 'SIGTERM');
    await Promise.all(children.map((child) => childExit(child)));
  }
}

/** A host A processor: `trialrun run <processor>` with host A's environment. */
async function startOnA(processor: 'learner' | 'reward' | 'analytics-sink', env: NodeJS.ProcessEnv, runId: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [join(repoRoot(), 'bin', 'trialrun.js'), 'run', processor, '--instance', 'a', '--run-id', runId, '--batch-size', String(BATCH_SIZE), '--session-timeout-ms', '10000'], {
    env, stdio: ['ignore', 'inherit', 'pipe'],
  });
  await running(child, `host A ${processor}`, 'a');
  return child;
}

interface Loop {
  readonly context: ProcessorContext;
  readonly hostB: SecondHost;
  /** The variables both hosts share (endpoints, topic prefix, s3:// locations, credentials). */
  readonly shared: Record<string, string>;
  readonly trees: BlobTreeStore;
  readonly published: Task[];
  readonly onA: ChildProcess[];
}

/** Fresh tasks of the bundle, ids made unique per wave; every other one with all its trees claim-checked to S3. */
let bundle: readonly Task[] = [];
async function wave(loop: Loop, index: number, options: { slow?: boolean } = {}): Promise<Task[]> {
  const tasks = bundle.slice((index * WAVE) % bundle.length).concat(bundle).slice(0, WAVE).map((task) => ({
    ...task,
    taskId: `${task.taskId}-w${index}`,
    // A visible test that takes its time, so that a crash lands while episodes run.
    ...(options.slow ? { visibleTests: { ...task.visibleTests, 'test_takes_its_time.py': 'import time\n\n\ndef test_takes_its_time():\n    time.sleep(2)\n' } } : {}),
  }));
  return Promise.all(tasks.map((task, i) => (i % 2 === 0 ? storeLargeTrees(task, loop.trees, 0) : task)));
}

async function publish(loop: Loop, tasks: Task[]): Promise<void> {
  await publishTasks(loop.context.kafka, loop.context.serde, loop.context.names, tasks);
  loop.published.push(...tasks);
}

interface Counts {
  trajectories: TopicValue<'trajectories'>[];
  verifications: TopicValue<'verifications'>[];
  rewards: TopicValue<'rewards'>[];
  checkpoints: TopicValue<'policyCheckpoints'>[];
}

/** Every published task rolled out G times, each trajectory verified once and rewarded once, nothing dead-lettered: by id, in Kafka. */
async function assertExactAccounting(loop: Loop): Promise<Counts> {
  const { context, published } = loop;
  const samples = published.length * GROUP_SIZE;
  await eventually('every sample rewarded', async () => (await readAll(context, 'rewards')).length >= samples, 900_000, 2000);
  // Past every input, in every group: a duplicate from redone work would be visible now.
  for (const [group, input] of [['rollout-worker', 'tasks'], ['verifier', 'trajectories'], ['reward', 'verifications'], ['learner', 'rewards'], ['analytics-sink', 'rewards']] as const) {
    await eventually(`${group} to commit past its ${input}`, () => committedPastEnd(context, `${context.names.prefix}${group}`, input), 300_000, 1000);
  }
  // One read of every topic that sees every sample: on a loaded machine a read to the end has come back short.
  let read: [TopicValue<'trajectories'>[], TopicValue<'verifications'>[], TopicValue<'rewards'>[], TopicValue<'policyCheckpoints'>[], TopicValue<'deadLetters'>[]] = [[], [], [], [], []];
  await eventually('a read that sees every sample', async () => {
    read = await Promise.all([readAll(context, 'trajectories'), readAll(context, 'verifications'), readAll(context, 'rewards'), readAll(context, 'policyCheckpoints'), readAll(context, 'deadLetters')]);
    return read.slice(0, 3).every((records) => records.length >= samples);
  }, 300_000, 2000);
  const [trajectories, verifications, rewards, checkpoints, deadLetters] = read;
  assert.deepEqual(deadLetters.map((d) => d.error), [], 'nothing dead-lettered');
  const perTask = new Map<string, number>();
  for (const t of trajectories) perTask.set(t.lineage.taskId, (perTask.get(t.lineage.taskId) ?? 0) + 1);
  assert.deepEqual(published.map((task) => perTask.get(task.taskId) ?? 0), published.map(() => GROUP_SIZE), 'G trajectories for every task');
  const ids = trajectories.map((t) => t.trajectoryId).sort();
  assert.equal(new Set(ids).size, samples, 'one trajectory per sample, none twice');
  assert.deepEqual(verifications.map((v) => v.trajectoryId).sort(), ids, 'one verification per trajectory');
  assert.deepEqual(rewards.map((r) => r.trajectoryId).sort(), ids, 'one reward per trajectory');
  const versions = checkpoints.map((c) => c.version);
  assert.deepEqual(versions, versions.map((_, i) => i + 1), 'each checkpoint version once, in order');
  return { trajectories, verifications, rewards, checkpoints };
}

/** Host A's state folders that lie inside the checkout (the stack's, when the test command keeps it there). */
function stateFoldersIn(checkout: string): string[] {
  return [...new Set([join(checkout, '.trialrun'), stackPaths().stateDir])].filter((folder) => folder.startsWith(`${checkout}/`) && existsSync(folder));
}

/** `trialrun sql` as a third host would run it: an empty folder as its state and data folder, the lake on S3. */
async function lakeCounts(loop: Loop): Promise<Record<string, number>> {
  const third = tempDir('two-hosts-reader');
  const query = 'SELECT (SELECT count(*) FROM trajectories) AS trajectories, (SELECT count(DISTINCT trajectory_id) FROM trajectories) AS distinct_trajectories, ' +
    '(SELECT count(*) FROM verifications) AS verifications, (SELECT count(*) FROM rewards) AS rewards, (SELECT count(DISTINCT trajectory_id) FROM rewards) AS distinct_rewards';
  const result = await runCli(['sql', query, '--format', 'json'], { env: { ...loop.shared, TRIALRUN_STATE_DIR: third, TRIALRUN_DATA_DIR: third }, cwd: third });
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(readdirSync(third), [], 'the reader kept nothing in its folder');
  rmSync(third, { recursive: true, force: true });
  // count(*) is a BIGINT, which the JSON format writes as a string.
  return Object.fromEntries(Object.entries(JSON.parse(result.stdout.trim()) as Record<string, string>).map(([name, count]) => [name, Number(count)]));
}

/** Waits until the lake on S3 holds every sample's rows once (the sink lands a file every few seconds). */
async function assertLakeExact(loop: Loop, samples: number): Promise<Record<string, number>> {
  let counts: Record<string, number> = {};
  await eventually('the lake on S3 to hold every row', async () => {
    counts = await lakeCounts(loop);
    return counts.rewards! >= samples && counts.trajectories! >= samples && counts.verifications! >= samples;
  }, 300_000, 3000);
  assert.deepEqual(counts, { trajectories: samples, distinct_trajectories: samples, verifications: samples, rewards: samples, distinct_rewards: samples }, 'each row once in the lake');
  return counts;
}

test('two hosts sharing only Kafka, the registry and S3: exact counts, checkpoints and claim checks through S3, the lake read from a third folder; a crashed host and a stopped S3 lose and duplicate nothing', { timeout: 1_800_000 }, async () => {
  const began = Date.now();
  const context = await freshContext('two-hosts');
  const runId = `two-hosts-${Date.now().toString(36)}`;
  const base = `s3://trialrun/${runId}`;
  const shared: Record<string, string> = {
    TRIALRUN_TOPIC_PREFIX: context.names.prefix,
    TRIALRUN_S3_URL: S3_URL,
    AWS_ACCESS_KEY_ID: STACK_S3_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY: STACK_S3_SECRET_ACCESS_KEY,
    TRIALRUN_CHECKPOINTS: `${base}/checkpoints`,
    TRIALRUN_ARTIFACTS: `${base}/artifacts`,
    TRIALRUN_LAKE: `${base}/lake`,
    ...Object.fromEntries(['KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL', 'TRIALRUN_KAFKA_CLIENT'].flatMap((name) => (process.env[name] ? [[name, process.env[name]!]] : []))),
  };
  const hostAFolder = tempDir('two-hosts-a');
  const hostAEnv: NodeJS.ProcessEnv = { ...process.env, ...shared, TRIALRUN_STATE_DIR: join(hostAFolder, 'state'), TRIALRUN_DATA_DIR: join(hostAFolder, 'data') };
  const hostB = new SecondHost('two-hosts-b', { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/root', TRIALRUN_STATE_DIR: HOST_B_STATE, ...shared });
  const blobs = new S3BlobStore(shared.TRIALRUN_ARTIFACTS!, s3);
  const trees = new BlobTreeStore(blobs);
  bundle = (await prepareTasks({ file: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'), rejectsDir: join(hostAFolder, 'rejects') })).tasks;
  const loop: Loop = { context, hostB, shared, trees, published: [], onA: [] };

  // Host B shares none of host A's folders: the stack's state, host A's state and data, this checkout's state.
  // Each is looked for by something in it on host A (a state folder inside the checkout is an empty folder there).
  for (const folder of [stackPaths().stateDir, hostAFolder, join(repoRoot(), '.trialrun'), dirname(hostB.root)]) {
    const entry = existsSync(folder) ? readdirSync(folder)[0] : undefined;
    const probe = entry === undefined ? folder : join(folder, entry);
    assert.equal(await hostB.run(['/usr/bin/test', '-e', probe]), 1, `${probe} does not exist on host B`);
  }
  assert.equal(await hostB.run(['/usr/bin/test', '-S', '/var/run/docker.sock']), 1, 'host B has no Docker engine');
  // Host A's engine exports the sandbox image's root file system once, onto host B's disk (`trialrun sandbox rootfs`).
  const exported = await new RootfsStore(join(hostB.root, 'var', 'cache', 'trialrun', 'sandbox-rootfs'), new Docker(), newOwner()).get(imageFor('python-repair'));
  log(`exported ${exported.image} (${exported.digest}) onto host B's disk`);

  try {
    for (const processor of ['learner', 'reward', 'analytics-sink'] as const) loop.onA.push(await startOnA(processor, hostAEnv, runId));
    await hostB.start('rollout-worker', runId);
    await hostB.start('verifier', runId);
    const startedAt = Date.now();

    // Phase 1: waves of tasks until host B has played a checkpoint that the learner on host A published. Each wave is
    // learnt from before the next is published: only groups whose samples disagree train, so a wave may give none.
    let index = 0;
    for (; index < 6; index++) {
      await publish(loop, await wave(loop, index));
      await eventually(`wave ${index} learnt from`, async () => (await readAll(context, 'rewards')).length >= loop.published.length * GROUP_SIZE && committedPastEnd(context, `${context.names.prefix}learner`, 'rewards'), 600_000, 1000);
      if ((await readAll(context, 'trajectories')).some((t) => (t.lineage.policyVersion ?? 0) > 0)) break;
    }
    const first = await assertExactAccounting(loop);
    const played = [...new Set(first.trajectories.map((t) => t.lineage.policyVersion ?? 0))].sort((a, b) => a - b);
    assert.ok(played.some((version) => version > 0), `host B played a checkpoint of host A's learner (versions played: ${played.join(', ')})`);
    const claimChecked = loop.published.filter((task) => task.stored !== undefined && Object.keys(task.stored).length > 0);
    assert.ok(claimChecked.length > 0 && claimChecked.every((task) => Object.keys(task.files).length === 0), 'the claim-checked tasks carry no files of their own');
    for (const task of claimChecked) {
      const ofTask = first.trajectories.filter((t) => t.lineage.taskId === task.taskId);
      // Each episode edited the task's files, which only the tree on S3 holds.
      assert.ok(ofTask.every((t) => Object.keys(t.finalFiles).length > 0), `${task.taskId}: host B resolved its claim-checked files from S3`);
    }
    const phase1 = await assertLakeExact(loop, loop.published.length * GROUP_SIZE);
    console.log(`# phase 1: ${loop.published.length} tasks (${claimChecked.length} claim-checked), versions played ${played.join(', ')}, lake ${JSON.stringify(phase1)}, ${((Date.now() - startedAt) / 1000).toFixed(0)} s`);

    // Phase 2a: host B crashes mid-wave (every process SIGKILLed) and comes back on the same disk.
    const crashWave = await wave(loop, ++index, { slow: true });
    await publish(loop, crashWave);
    const ofWave = async (tasks: Task[]): Promise<number> => (await readAll(context, 'trajectories')).filter((t) => tasks.some((task) => task.taskId === t.lineage.taskId)).length;
    await eventually('host B mid-wave', async () => (await ofWave(crashWave)) >= 1, 600_000, 250);
    const killed = await hostB.crash();
    const doneAtCrash = await ofWave(crashWave);
    console.log(`# crashed host B (${killed} processes) with ${doneAtCrash} of ${crashWave.length * GROUP_SIZE} trajectories of the wave committed`);
    assert.ok(doneAtCrash < crashWave.length * GROUP_SIZE, 'the crash landed mid-wave');
    await hostB.start('rollout-worker', runId);
    await hostB.start('verifier', runId);

    // Phase 2b: the S3 server stops under load (checkpoints, trees, the lake) and comes back.
    const outageWave = await wave(loop, ++index);
    await publish(loop, outageWave);
    await eventually('host B rolling out the next wave', async () => (await ofWave(outageWave)) >= 1, 600_000, 250);
    // Its trees go to S3 now; its records while S3 is stopped.
    const lastWave = await wave(loop, ++index);
    assert.equal(await server.stop(log), 'stopped');
    const stoppedAt = Date.now();
    await publish(loop, lastWave);
    // Long enough for every processor to hit the stopped server and wait (they probe every 1-5 s).
    await new Promise((resolve) => setTimeout(resolve, 20_000));
    assert.deepEqual(await readAll(context, 'deadLetters'), [], 'nothing dead-lettered while S3 is stopped');
    assert.equal(await server.ensure(log), 'started');
    const waited = [...started].filter((child) => (stderrOf.get(child) ?? '').includes('leaving the group until the host answers')).length;
    console.log(`# S3 stopped for ${((Date.now() - stoppedAt) / 1000).toFixed(0)} s; ${waited} processors left their group until it answered`);

    const final = await assertExactAccounting(loop);
    const lake = await assertLakeExact(loop, loop.published.length * GROUP_SIZE);
    console.log(`# final: ${loop.published.length} tasks, ${final.trajectories.length} trajectories, ${final.checkpoints.length} checkpoints, lake ${JSON.stringify(lake)}, ${((Date.now() - began) / 1000).toFixed(0)} s in all`);

    await hostB.stop();
    for (const child of loop.onA) assert.equal(await stopChild(child, { graceMs: 60_000 }), 0, 'host A processors stop cleanly');
    // Everything either host keeps is in Kafka or on S3: neither wrote to its state or data folder.
    assert.deepEqual(readdirSync(join(hostB.root, HOST_B_STATE.slice(1))), [], 'host B kept nothing in its state folder');
    for (const folder of ['state', 'data']) assert.ok(!existsSync(join(hostAFolder, folder)) || readdirSync(join(hostAFolder, folder)).length === 0, `host A kept nothing in its ${folder} folder`);
  } finally {
    for (const child of [...loop.onA, ...started]) for (const pid of [...descendants(child.pid!), child.pid!]) signal(pid, 'SIGKILL');
    blobs.close();
    await Promise.all([...loop.onA, ...started].map((child) => childExit(child)));
    // Host B's disk holds the sandbox image's root file system (about 130 MB).
    rmSync(dirname(hostB.root), { recursive: true, force: true });
    rmSync(hostAFolder, { recursive: true, force: true });
  }
});
