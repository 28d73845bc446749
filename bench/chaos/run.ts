/**
 * One chaos run: the loop's processors as their own `trialrun run` processes on a 3-broker cluster and a Docker
 * engine of the run's own (and, with the llm policy, a model server of its own), tasks published a wave at a
 * time, and between the waves each of those parts SIGKILLed once at a seeded moment and started again. Then
 * every record is counted by id in Kafka (read_committed) and in the Parquet lake (DuckDB), by `tallyChaos`.
 *
 * Nothing shared is killed: the stack's own Kafka, Docker engine and model server serve other runs; the cluster
 * (ports 29092-29094), the engine and the model server here live under `<state>/chaos`.
 *
 * A run that stops moving is reported, not waited on: when no consumer group commits anything for
 * `stallSeconds` while work remains, the run ends as `stalled`, with the kill before the stall and the counts so
 * far (the confluent client's stall after a broker came back, docs/kafka.md, looks like this).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createWriteStream, mkdtempSync, readFileSync, type WriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../../cli/paths.js';
import { AnalyticsCatalog } from '../../connectors/analytics/index.js';
import { committedPastLastRecord, createKafka, DEFAULT_KAFKA_CLIENT, groupLag, readTopic, type KafkaClientName, type KafkaPort } from '../../connectors/kafka/index.js';
import { TopicSerde } from '../../connectors/registry/index.js';
import { prepareTasks, publishTasks } from '../../pipelines/jobs/task-job/index.js';
import { prepareTopics, type ProcessorContext } from '../../pipelines/runtime/index.js';
import { LINEAR_REPAIR_POLICY } from '../../policies/index.js';
import { topicNames, wholeNumber, type Task, type TopicKey, type TopicValue } from '../../schemas/index.js';
import { childExit, daemonFiles, enginePaths, extraEngineComponent, extraEngineComponents, kafkaClusterComponent, llmComponent, stackComponents, stackPaths, stackUp, stopChild, type StackComponent } from '../../stack/index.js';
import { chaosSchedule, chaosTargets, CHAOS_PROCESSORS, type ChaosProcessor, type ChaosTarget, type ScheduledKill } from './schedule.js';
import { formatTally, tallyChaos, type ChaosRecords, type ChaosTally } from './tally.js';

/** The policies a chaos run rolls out with: the scripted repair policy, or the LLM behind a model server of the run's own. */
export const CHAOS_POLICIES = [LINEAR_REPAIR_POLICY, 'llm'] as const;
export type ChaosPolicy = (typeof CHAOS_POLICIES)[number];

export interface ChaosOptions {
  /** Seeds the kill schedule: order, gaps, downtimes, which broker. @default '1' */
  readonly seed?: string;
  /** The Kafka client of every processor. @default DEFAULT_KAFKA_CLIENT */
  readonly client?: KafkaClientName;
  /** @default LINEAR_REPAIR_POLICY */
  readonly policy?: ChaosPolicy;
  /** Tasks of tasks/repair-bundle.jsonl published, in as many waves as there are kills (and one more). @default 12 */
  readonly tasks?: number;
  /** Samples per task. @default 2 */
  readonly groupSize?: number;
  /** Samples per learner update. @default 4 */
  readonly batchSize?: number;
  /** The whole run's time limit, kills and draining; past it the run ends as `timed-out` with its counts. @default 20 */
  readonly minutes?: number;
  /** Mean gap before each kill (each drawn from half to one and a half times it). @default 20 */
  readonly meanGapSeconds?: number;
  /** No consumer group committing anything this long, with work left, is a stall; at least 3 times the longest gap. @default 180 */
  readonly stallSeconds?: number;
  /** Progress lines (kills, counts). @default stdout */
  readonly log?: (line: string) => void;
  /** Stop the run's cluster, engine and model server at the end. @default true */
  readonly stopParts?: boolean;
}

interface ResolvedChaos {
  readonly seed: string;
  readonly client: KafkaClientName;
  readonly policy: ChaosPolicy;
  readonly tasks: number;
  readonly groupSize: number;
  readonly batchSize: number;
  readonly deadlineMs: number;
  readonly meanGapMs: number;
  readonly stallMs: number;
  readonly log: (line: string) => void;
  readonly stopParts: boolean;
}

export function resolveChaos(options: ChaosOptions): ResolvedChaos {
  const resolved: ResolvedChaos = {
    seed: options.seed ?? '1',
    client: options.client ?? DEFAULT_KAFKA_CLIENT,
    policy: options.policy ?? LINEAR_REPAIR_POLICY,
    tasks: options.tasks ?? 12,
    groupSize: options.groupSize ?? 2,
    batchSize: options.batchSize ?? 4,
    deadlineMs: (options.minutes ?? 20) * 60_000,
    meanGapMs: (options.meanGapSeconds ?? 20) * 1000,
    stallMs: (options.stallSeconds ?? 180) * 1000,
    log: options.log ?? ((line) => void process.stdout.write(`${line}\n`)),
    stopParts: options.stopParts ?? true,
  };
  if (!CHAOS_POLICIES.includes(resolved.policy)) throw new Error(`ChaosOptions.policy: one of ${CHAOS_POLICIES.join(', ')}, got ${resolved.policy}`);
  for (const name of ['tasks', 'groupSize', 'batchSize'] as const) wholeNumber(`ChaosOptions.${name}`, resolved[name], { min: 1 });
  if (!(resolved.deadlineMs > 0 && resolved.meanGapMs > 0)) throw new Error('ChaosOptions.minutes and meanGapSeconds must be positive');
  if (resolved.stallMs < 3 * 1.5 * resolved.meanGapMs) throw new Error(`ChaosOptions.stallSeconds (${resolved.stallMs / 1000}) must be at least 3 times the longest gap (${(1.5 * resolved.meanGapMs) / 1000} s): a gap with nothing to do is no stall`);
  return resolved;
}

/** One kill as it happened. */
export interface KillRecord {
  readonly target: ChaosTarget;
  /** What died: a processor's or daemon's pid, a broker's node id. */
  readonly what: string;
  /** Seconds from the first task published. */
  readonly atSeconds: number;
  /** Whether the part had work in hand when it died (its group, or for a broker or the engine any sandbox group, behind its input). */
  readonly midWork: boolean;
  readonly downSeconds: number;
  /** Seconds from the restart to the part answering again (a processor saying it runs; null: it had not said so within 2 minutes). */
  readonly backAfterSeconds: number | null;
}

export interface ChaosResult {
  readonly seed: string;
  readonly client: KafkaClientName;
  readonly policy: ChaosPolicy;
  readonly prefix: string;
  readonly status: 'exact' | 'not-exact' | 'stalled' | 'timed-out';
  readonly kills: readonly KillRecord[];
  /** Processors that died without being killed (restarted each time). */
  readonly unexpectedExits: readonly string[];
  readonly tasks: number;
  readonly groupSize: number;
  /** Only for `stalled`: the last kill before it, and how long nothing was committed. */
  readonly stall: { readonly afterKill: string | null; readonly quietSeconds: number } | null;
  readonly kafka: ChaosTally;
  /** Null where the lake could not be read (a stalled or timed-out run counts it all the same when it can). */
  readonly lake: ChaosTally | null;
  readonly elapsedSeconds: number;
  /** Where each process's output is. */
  readonly logDir: string;
}

/** Every consumer group of the run and the topics it consumes: a group that has committed past all of them is done. */
const GROUP_INPUTS: ReadonlyArray<readonly [ChaosProcessor, readonly TopicKey[]]> = [
  ['rollout-worker', ['tasks']],
  ['verifier', ['trajectories']],
  ['reward', ['verifications']],
  ['learner', ['trajectories', 'rewards']],
  ['analytics-sink', ['tasks', 'trajectories', 'verifications', 'rewards', 'policyCheckpoints']],
];

const CLUSTER_PORTS = { basePort: 29092, controllerBasePort: 29192 } as const;
const MODEL_SERVER_PORT = 28090;
const ENGINE = 2;
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The parts the run owns (and may kill), all under `<state>/chaos`. */
function chaosParts(withModelServer: boolean) {
  const shared = stackPaths();
  const paths = { stateDir: join(shared.stateDir, 'chaos'), cacheDir: shared.cacheDir };
  const engine = enginePaths(ENGINE, paths.stateDir);
  const modelUrl = `http://127.0.0.1:${MODEL_SERVER_PORT}/v1`;
  return {
    paths,
    cluster: kafkaClusterComponent({ ...CLUSTER_PORTS, paths }),
    /** The engine and the sandbox images copied into it from the stack's engine. */
    engineWithImages: extraEngineComponents(ENGINE, undefined, paths.stateDir),
    engine: extraEngineComponent({ index: ENGINE, stateDir: paths.stateDir }),
    engineHost: engine.host,
    enginePidFile: daemonFiles(paths.stateDir, engine.daemon).pidFile,
    model: withModelServer ? { component: llmComponent({ url: modelUrl, external: false, daemonName: 'llm-chaos', paths }), url: modelUrl, pidFile: daemonFiles(paths.stateDir, 'llm-chaos').pidFile } : null,
  };
}

/** One processor process at a time per kind, restarted when it dies; its output goes to a file. */
class ProcessorFleet {
  private readonly children = new Map<ChaosProcessor, ChildProcess>();
  private readonly killing = new Set<ChildProcess>();
  private stopping = false;
  readonly unexpectedExits: string[] = [];
  private readonly logs = new Map<ChaosProcessor, WriteStream>();

  constructor(
    private readonly args: (name: ChaosProcessor) => string[],
    private readonly env: NodeJS.ProcessEnv,
    readonly logDir: string,
    private readonly log: (line: string) => void,
    private readonly clock: () => number,
  ) {}

  /** Starts `name` and resolves with the seconds until it says it runs (null: not within `waitMs`). */
  async start(name: ChaosProcessor, waitMs = 120_000): Promise<number | null> {
    const started = performance.now();
    const child = spawn(process.execPath, [join(repoRoot(), 'bin', 'trialrun.js'), 'run', name, ...this.args(name)], { env: this.env, stdio: ['ignore', 'ignore', 'pipe'] });
    this.children.set(name, child);
    let file = this.logs.get(name);
    if (!file) this.logs.set(name, (file = createWriteStream(join(this.logDir, `${name}.log`), { flags: 'a' })));
    file.write(`--- started pid ${child.pid} at t+${this.clock().toFixed(1)}s\n`);
    const running = new Promise<boolean>((resolve) => {
      child.stderr!.on('data', (chunk: Buffer) => {
        file!.write(chunk);
        if (chunk.toString().includes('running (instance')) resolve(true);
      });
      child.once('exit', () => resolve(false));
      setTimeout(() => resolve(false), waitMs).unref();
    });
    child.once('exit', (code, signal) => {
      file!.write(`--- pid ${child.pid} exited (${code ?? signal}) at t+${this.clock().toFixed(1)}s\n`);
      if (this.killing.has(child) || this.stopping || this.children.get(name) !== child) return;
      // Not killed by the run: a finding in itself. It is started again, as an operator's supervisor would.
      this.unexpectedExits.push(`${name} (pid ${child.pid}) exited by itself (${code ?? signal}) at t+${this.clock().toFixed(1)}s`);
      this.log(`t+${this.clock().toFixed(1)}s ${name} (pid ${child.pid}) exited by itself (${code ?? signal}); starting it again (log: ${join(this.logDir, `${name}.log`)})`);
      void pause(2_000).then(() => (this.stopping ? undefined : this.start(name)));
    });
    return (await running) ? (performance.now() - started) / 1000 : null;
  }

  /** SIGKILLs `name`'s process and waits for it to be gone; returns its pid. */
  async kill(name: ChaosProcessor): Promise<number> {
    const child = this.children.get(name)!;
    this.killing.add(child);
    child.kill('SIGKILL');
    await childExit(child);
    return child.pid!;
  }

  /** Stops every process gracefully (bounded), then kills what is left. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.children.values()].map((child) => stopChild(child, { graceMs: 60_000 })));
    for (const file of this.logs.values()) file.end();
  }

  /** The last lines of each process's log, for a report of what went wrong. */
  tails(lines = 15): string {
    return CHAOS_PROCESSORS.map((name) => {
      let text = '';
      try {
        text = readFileSync(join(this.logDir, `${name}.log`), 'utf8');
      } catch {
        return `[${name}] (no output)`;
      }
      return text.trimEnd().split('\n').slice(-lines).map((line) => `[${name}] ${line}`).join('\n');
    }).join('\n');
  }
}

/** Every committed record of a topic, decoded (a poison record, which only the tasks topic gets here, is skipped). */
async function readDecoded<K extends TopicKey>(context: ProcessorContext, key: K): Promise<TopicValue<K>[]> {
  const raw: Buffer[] = [];
  await readTopic(context.kafka, { topic: context.names.name(key), onRecord: ({ value }) => void (value && raw.push(value)) });
  const values: TopicValue<K>[] = [];
  for (const bytes of raw) values.push(await context.serde.decode(key, bytes));
  return values;
}

/** What Kafka holds (read_committed), reduced to ids. */
async function kafkaRecords(context: ProcessorContext): Promise<ChaosRecords> {
  const [trajectories, verifications, rewards, checkpoints, deadLetters] = await Promise.all([
    readDecoded(context, 'trajectories'),
    readDecoded(context, 'verifications'),
    readDecoded(context, 'rewards'),
    readDecoded(context, 'policyCheckpoints'),
    readDecoded(context, 'deadLetters'),
  ]);
  return {
    trajectories: trajectories.map((t) => ({ taskId: t.lineage.taskId, attempt: t.lineage.attempt, trajectoryId: t.trajectoryId })),
    verifications,
    rewards: rewards.map((r) => ({ trajectoryId: r.trajectoryId, learn: (r.disposition ?? 'learn') === 'learn' })),
    checkpoints,
    deadLetters: deadLetters.map((d) => ({ stage: d.error.stage })),
  };
}

/** What the lake holds, reduced to ids (DuckDB over the Parquet files). */
async function lakeRecords(dataDir: string): Promise<ChaosRecords> {
  const catalog = await AnalyticsCatalog.open(dataDir);
  try {
    const rows = async (sql: string): Promise<unknown[][]> => (await catalog.query(sql)).rows as unknown[][];
    return {
      trajectories: (await rows('SELECT task_id, attempt, trajectory_id FROM trajectories')).map(([taskId, attempt, trajectoryId]) => ({ taskId: String(taskId), attempt: Number(attempt), trajectoryId: String(trajectoryId) })),
      verifications: (await rows('SELECT trajectory_id FROM verifications')).map(([id]) => ({ trajectoryId: String(id) })),
      rewards: (await rows('SELECT trajectory_id, disposition FROM rewards')).map(([id, disposition]) => ({ trajectoryId: String(id), learn: disposition === 'learn' })),
      checkpoints: (await rows('SELECT version, parent_version FROM checkpoints')).map(([version, parent]) => ({ version: Number(version), parentVersion: parent === null ? null : Number(parent) })),
    };
  } finally {
    catalog.close();
  }
}

/** The sum of every group's committed offsets on its inputs: it moves only when a processor commits. */
async function committedSignature(observer: KafkaPort, prefix: string, names: ProcessorContext['names']): Promise<string | null> {
  const admin = observer.admin();
  try {
    await admin.connect();
    let sum = 0;
    for (const [group, inputs] of GROUP_INPUTS) {
      for (const topic of await admin.fetchGroupOffsets(`${prefix}${group}`, inputs.map((key) => names.name(key)))) {
        for (const p of topic.partitions) sum += Math.max(0, Number(p.offset));
      }
    }
    return String(sum);
  } catch {
    // A broker down or a coordinator moving: no reading, which is not progress either.
    return null;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** The groups whose work a kill of `target` interrupts: its own, or for a part beneath the processors, those running sandboxes. */
function groupsHit(target: ChaosTarget): readonly ChaosProcessor[] {
  if ((CHAOS_PROCESSORS as readonly string[]).includes(target)) return [target as ChaosProcessor];
  return target === 'model-server' ? ['rollout-worker'] : ['rollout-worker', 'verifier'];
}

/**
 * Whether any listed group has input records it has not committed past. Read from offsets alone (no consumer, so
 * it answers in milliseconds): a partition whose last stable offset is more than one past the group's committed
 * offset holds a record still to handle (a transactional topic ends with one commit marker, which no group reads).
 */
async function workInHand(observer: ProcessorContext, groups: readonly ChaosProcessor[]): Promise<boolean> {
  const admin = observer.kafka.admin();
  try {
    await admin.connect();
    for (const [group, inputs] of GROUP_INPUTS.filter(([group]) => groups.includes(group))) {
      for (const key of inputs) {
        const lag = await groupLag(admin, `${observer.names.prefix}${group}`, observer.names.name(key));
        if (lag.partitions.some((p) => p.lag > 1)) return true;
      }
    }
    return false;
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** Every group has committed past the last record of each of its inputs: under exactly once, every output is written. */
async function drained(observer: ProcessorContext): Promise<boolean> {
  for (const [group, inputs] of GROUP_INPUTS) {
    for (const key of inputs) {
      const past = await committedPastLastRecord(observer.kafka, `${observer.names.prefix}${group}`, observer.names.name(key)).catch(() => false);
      if (!past) return false;
    }
  }
  return true;
}

/** Splits `items` into `parts` runs as even as the count allows (early ones one longer). */
function waves<T>(items: readonly T[], parts: number): T[][] {
  const out: T[][] = [];
  let at = 0;
  for (let i = 0; i < parts; i++) {
    const size = Math.floor(items.length / parts) + (i < items.length % parts ? 1 : 0);
    out.push(items.slice(at, at + size));
    at += size;
  }
  return out;
}

export async function runChaos(options: ChaosOptions = {}): Promise<ChaosResult> {
  const run = resolveChaos(options);
  const { log } = run;
  const withModel = run.policy === 'llm';
  const parts = chaosParts(withModel);
  const startedAll = performance.now();

  // The shared stack (schema registry, the stack's engine whose images are copied) is used, never killed.
  await stackUp((line) => log(line), stackComponents());
  const ownParts: StackComponent[] = [parts.cluster, ...parts.engineWithImages, ...(parts.model ? [parts.model.component] : [])];
  await stackUp((line) => log(`${line} (the chaos run's own)`), ownParts, parts.paths.stateDir);

  const names = topicNames(`chaos-${randomUUID().slice(0, 8)}.`);
  const brokers = parts.cluster.brokers.join(',');
  // The observer (progress, counts) uses kafkajs whatever the processors use, so it does not share the client under
  // test; its connection errors while a broker is down are expected, and only errors are shown.
  const observer: ProcessorContext = { kafka: createKafka({ clientId: 'chaos-observer', brokers: [...parts.cluster.brokers], client: 'kafkajs', logLevel: 'error' }), serde: new TopicSerde(names), names };
  await prepareTopics(observer);
  const runDir = mkdtempSync(join(tmpdir(), 'trialrun-chaos-'));
  const dataDir = join(runDir, 'lake');
  const runId = `chaos-${run.seed}-${run.client}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    KAFKA_BROKERS: brokers,
    TRIALRUN_TOPIC_PREFIX: names.prefix,
    TRIALRUN_KAFKA_CLIENT: run.client,
    TRIALRUN_DATA_DIR: dataDir,
    TRIALRUN_CHECKPOINTS: join(runDir, 'checkpoints'),
    TRIALRUN_ARTIFACTS: join(runDir, 'artifacts'),
    DOCKER_HOST: parts.engineHost,
  };
  delete env.TRIALRUN_LAKE;
  const policyArgs = parts.model ? ['--policy', 'llm', '--llm-url', parts.model.url] : [];
  const args = (name: ChaosProcessor): string[] => [
    '--instance', '0', '--run-id', runId, '--group-size', String(run.groupSize), '--session-timeout-ms', '10000',
    ...(name === 'learner' ? ['--batch-size', String(run.batchSize)] : []),
    ...(name === 'rollout-worker' ? policyArgs : []),
  ];
  let firstPublished: number | null = null;
  const clock = (): number => (firstPublished === null ? 0 : (performance.now() - firstPublished) / 1000);
  const fleet = new ProcessorFleet(args, env, runDir, log, clock);
  log(`chaos run: seed ${run.seed}, client ${run.client}, policy ${run.policy}, topics ${names.prefix}*, brokers ${brokers}, engine ${parts.engineHost}; logs in ${runDir}`);

  const kills: KillRecord[] = [];
  let status: ChaosResult['status'] = 'exact';
  let stall: ChaosResult['stall'] = null;
  try {
    // One at a time: on a loaded machine several at once can miss the command's bounded broker check.
    for (const name of CHAOS_PROCESSORS) {
      if ((await fleet.start(name, 300_000)) === null) throw new Error(`${name} did not start (log: ${join(runDir, `${name}.log`)})\n${fleet.tails()}`);
    }
    const tasks: readonly Task[] = (await prepareTasks({ file: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'), rejectsDir: join(runDir, 'rejects') })).tasks.slice(0, run.tasks);
    if (tasks.length < run.tasks) throw new Error(`ChaosOptions.tasks: tasks/repair-bundle.jsonl has ${tasks.length} tasks, asked for ${run.tasks}`);
    const schedule = chaosSchedule({ seed: run.seed, targets: chaosTargets(withModel), meanGapMs: run.meanGapMs, brokers: parts.cluster.brokers.length });
    log(`schedule: ${schedule.map((k) => `${k.target}${k.brokerNode ? ` ${k.brokerNode}` : ''} after ${(k.gapMs / 1000).toFixed(1)} s, down ${(k.downMs / 1000).toFixed(1)} s`).join('; ')}`);

    // A poison record first: the dead letters it makes are the only ones a correct run has.
    const poison = observer.kafka.producer();
    await poison.connect();
    await poison.send({ topic: names.name('tasks'), messages: [{ key: 'chaos-poison', value: Buffer.from('{"this":"is not in the registry wire format"}') }] });
    await poison.disconnect();

    // Progress: the groups' committed offsets, read every 5 s; unchanged for stallMs while not drained is a stall.
    let lastSignature: string | null = null;
    let lastProgress = performance.now();
    let lastKill: string | null = null;
    let quiet = false;
    let killing = false;
    let monitoring = true;
    const monitor = (async () => {
      while (monitoring) {
        const signature = await committedSignature(observer.kafka, names.prefix, names);
        if (signature !== null && signature !== lastSignature) {
          lastSignature = signature;
          lastProgress = performance.now();
        }
        if (!killing && performance.now() - lastProgress > run.stallMs) quiet = true;
        await pause(5_000);
      }
    })();
    const deadline = startedAll + run.deadlineMs;
    const ended = (): boolean => quiet || performance.now() > deadline;

    const publishedWaves = waves(tasks, schedule.length + 1);
    const published: Task[] = [];
    const publish = async (batch: readonly Task[]): Promise<void> => {
      if (batch.length === 0) return;
      firstPublished ??= performance.now();
      await publishTasks(observer.kafka, observer.serde, names, batch);
      published.push(...batch);
      log(`t+${clock().toFixed(1)}s published ${batch.length} tasks`);
    };
    for (const [i, kill] of schedule.entries()) {
      await pause(kill.gapMs);
      if (ended()) break;
      // A wave of tasks at the drawn moment, and the kill as soon as its target has work in hand from it (a minute
      // at most): a kill of an idle part proves little.
      await publish(publishedWaves[i]!);
      const busyBy = performance.now() + 60_000;
      let midWork = false;
      while (!(midWork = await workInHand(observer, groupsHit(kill.target))) && performance.now() < busyBy) await pause(250);
      killing = true;
      const record = await killOnce(kill, midWork, parts, fleet, clock, log).finally(() => void (killing = false));
      kills.push(record);
      lastKill = `${record.target} ${record.what} at t+${record.atSeconds.toFixed(1)}s`;
      // Down time is no stall: the clock starts again once the part is back.
      lastProgress = Math.max(lastProgress, performance.now());
    }
    if (!ended()) await publish(publishedWaves[schedule.length]!);

    while (!ended() && !(await drained(observer))) await pause(10_000);
    monitoring = false;
    await monitor;
    if (quiet) {
      status = 'stalled';
      stall = { afterKill: lastKill, quietSeconds: Math.round((performance.now() - lastProgress) / 1000) };
      log(`STALL: no consumer group committed anything for ${stall.quietSeconds} s (last kill: ${lastKill ?? 'none'}); counts so far follow`);
      log(fleet.tails());
    } else if (performance.now() > deadline) {
      status = 'timed-out';
      log(`TIMED OUT after ${run.deadlineMs / 60_000} minutes; counts so far follow`);
      log(fleet.tails());
    }

    const expected = { taskIds: published.map((t) => t.taskId), groupSize: run.groupSize, batchSize: run.batchSize };
    const kafka = tallyChaos(expected, await kafkaRecords(observer));
    log(formatTally('Kafka', kafka));
    let lake: ChaosTally | null = null;
    try {
      lake = tallyChaos(expected, await lakeRecords(dataDir));
      log(formatTally('lake (DuckDB)', lake));
    } catch (error) {
      log(`lake (DuckDB): not read (${String(error)})`);
    }
    if (status === 'exact' && (!kafka.exact || !lake?.exact)) status = 'not-exact';
    return {
      seed: run.seed,
      client: run.client,
      policy: run.policy,
      prefix: names.prefix,
      status,
      kills,
      unexpectedExits: fleet.unexpectedExits,
      tasks: published.length,
      groupSize: run.groupSize,
      stall,
      kafka,
      lake,
      elapsedSeconds: Math.round((performance.now() - startedAll) / 1000),
      logDir: runDir,
    };
  } finally {
    await fleet.stop();
    if (run.stopParts) for (const part of [...ownParts].reverse()) await part.stop((line) => log(`${line} (the chaos run's own)`)).catch((error: unknown) => log(`stopping ${part.name}: ${String(error)}`));
  }
}

/** SIGKILLs one target, keeps it down for its drawn time, starts it again and waits for it to answer. */
async function killOnce(kill: ScheduledKill, midWork: boolean, parts: ReturnType<typeof chaosParts>, fleet: ProcessorFleet, clock: () => number, log: (line: string) => void): Promise<KillRecord> {
  const at = clock();
  const note = (line: string): void => log(`  ${line}`);
  let what: string;
  let restart: () => Promise<number | null>;
  const timed = async (start: () => Promise<unknown>): Promise<number> => {
    const started = performance.now();
    await start();
    return (performance.now() - started) / 1000;
  };
  if ((CHAOS_PROCESSORS as readonly string[]).includes(kill.target)) {
    const name = kill.target as ChaosProcessor;
    what = `pid ${await fleet.kill(name)}`;
    restart = () => fleet.start(name);
  } else if (kill.target === 'broker') {
    const node = kill.brokerNode!;
    const pid = parts.cluster.nodePid(node);
    if (pid === undefined) throw new Error(`broker ${node} of the chaos cluster is not running`);
    process.kill(pid, 'SIGKILL');
    what = `node ${node} (pid ${pid})`;
    restart = () => timed(() => parts.cluster.ensure(note));
  } else if (kill.target === 'docker-engine') {
    // dockerd leads its own process group (stack/process.ts), containerd with it: the engine dies at once.
    const pid = Number(readFileSync(parts.enginePidFile, 'utf8').trim());
    killGroup(pid);
    what = `dockerd (pid ${pid})`;
    restart = () => timed(() => parts.engine.ensure(note));
  } else {
    const model = parts.model!;
    const pid = Number(readFileSync(model.pidFile, 'utf8').trim());
    killGroup(pid);
    what = `model server (pid ${pid})`;
    restart = () => timed(() => model.component.ensure(note));
  }
  log(`t+${at.toFixed(1)}s killed ${kill.target} ${what}${midWork ? ' with work in hand' : ' (idle: no work came within a minute)'}; down for ${(kill.downMs / 1000).toFixed(1)} s`);
  await pause(kill.downMs);
  const back = await restart();
  log(`t+${clock().toFixed(1)}s ${kill.target} started again${back === null ? ', not running 2 minutes later' : `, back after ${back.toFixed(1)} s`}`);
  return { target: kill.target, what, atSeconds: Math.round(at * 10) / 10, midWork, downSeconds: kill.downMs / 1000, backAfterSeconds: back === null ? null : Math.round(back * 10) / 10 };
}

/** SIGKILLs a daemon's whole process group (the stack starts each daemon as a group leader), else the process alone. */
function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    process.kill(pid, 'SIGKILL');
  }
}
