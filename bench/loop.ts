/**
 * The streaming loop against the seed's synchronous batch loop: `npm run bench:loop [-- --tasks 20 --rounds 3]`.
 *
 * Both sides are `runLoop` over the same tasks, the same processors (rollout workers, verifiers, reward, learner,
 * analytics sink), the same worker and episode parallelism and one sandbox pool of the same size:
 *   synchronous  `schedule: 'synchronous'`: publish one learner batch of tasks, roll it all out, wait for the
 *                slowest, verify, reward, train, wait until the workers serve the new version, then the next batch;
 *   streaming    `schedule: 'streaming'`: every stage at once, the learner training on each batch as it completes.
 * The task times are long-tailed by real commands in the sandbox: every task carries a visible test
 * (bench/long-tail/) that sleeps `--slow-seconds` in `--slow-fraction` of the sandboxes, one draw per sandbox, so
 * a slow episode (or verification) takes that long more in each of its pytest runs. `--tail episode` (the issue's
 * "10% of episodes") draws per sandbox; `--tail task` makes every sandbox of `--slow-fraction` of the tasks slow
 * (all G samples of a task at once). The learner drops samples older than `--max-staleness` versions on both
 * sides. Measured per side and round, on fresh topics each time:
 *   trajectories per second    samples rewarded / the loop's working time (first task published to last record landed);
 *   sandbox utilisation        busy sandbox-seconds (leases held, sampled every 50 ms) / (pool size x working time);
 *   learner idle fraction      1 - time the learner spent handling records / working time;
 *   staleness                  per trained sample: the learner's version when its reward was written minus the
 *                              sample's policy version (0 = on-policy); samples dropped as stale are counted too.
 * Sides alternate by round (bench/harness.ts); figures go to bench/results/loop.json.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { intOption } from '../cli/command.js';
import { repoRoot } from '../cli/paths.js';
import { LocalCheckpointStore } from '../connectors/checkpoints/index.js';
import { createKafka, readTopic } from '../connectors/kafka/index.js';
import { TopicSerde } from '../connectors/registry/index.js';
import { DockerSandboxPool } from '../connectors/sandbox/index.js';
import '../envs/index.js';
import { prepareTasks } from '../pipelines/jobs/task-job/index.js';
import { runLoop } from '../pipelines/loop/index.js';
import type { ProcessorContext } from '../pipelines/runtime/index.js';
import { topicNames, type Task, type TopicKey, type TopicValue } from '../schemas/index.js';
import { imageFor, stackUp } from '../stack/index.js';
import { BenchReport, figures, interleave, loadLine } from './harness.js';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '0' },
    'group-size': { type: 'string', default: '4' },
    'batch-size': { type: 'string', default: '16' },
    sandboxes: { type: 'string', default: '12' },
    workers: { type: 'string', default: '3' },
    'tasks-per-worker': { type: 'string', default: '4' },
    episodes: { type: 'string', default: '4' },
    verifiers: { type: 'string', default: '2' },
    'max-turns': { type: 'string', default: '5' },
    'max-staleness': { type: 'string', default: '1' },
    'slow-fraction': { type: 'string', default: '0.1' },
    'slow-seconds': { type: 'string', default: '8' },
    tail: { type: 'string', default: 'episode' },
  },
});
const TASKS = intOption(values, 'tasks')!;
const ROUNDS = intOption(values, 'rounds')!;
const WARMUP = intOption(values, 'warmup', 0)!;
const GROUP = intOption(values, 'group-size')!;
const BATCH = intOption(values, 'batch-size')!;
const SANDBOXES = intOption(values, 'sandboxes')!;
const WORKERS = intOption(values, 'workers')!;
const TASKS_PER_WORKER = intOption(values, 'tasks-per-worker')!;
const EPISODES = intOption(values, 'episodes')!;
const VERIFIERS = intOption(values, 'verifiers')!;
const MAX_TURNS = intOption(values, 'max-turns')!;
const MAX_STALENESS = intOption(values, 'max-staleness', 0)!;
const SLOW_FRACTION = Number(values['slow-fraction']);
const SLOW_SECONDS = Number(values['slow-seconds']);
if (!(SLOW_FRACTION >= 0 && SLOW_FRACTION <= 1)) throw new Error(`--slow-fraction takes a number from 0 to 1, got ${values['slow-fraction']}`);
if (values.tail !== 'episode' && values.tail !== 'task') throw new Error(`--tail takes episode or task, got ${values.tail}`);
const TAIL: 'episode' | 'task' = values.tail;
if (!(SLOW_SECONDS >= 0 && SLOW_SECONDS <= 15)) throw new Error(`--slow-seconds takes 0 to 15 (a verifier test run has 20 s), got ${values['slow-seconds']}`);

const log = (line: string): void => void process.stderr.write(`# ${line}\n`);
const SLOW_TEST = 'test_takes_its_time.py';

/** The long-tail test with its two constants set: the share of sandboxes that sleep, and for how long. */
function slowTest(fraction: number, seconds: number): string {
  const source = readFileSync(join(repoRoot(), 'bench', 'long-tail', SLOW_TEST), 'utf8');
  return source.replace(/^FRACTION = .*$/m, `FRACTION = ${fraction}`).replace(/^SECONDS = .*$/m, `SECONDS = ${seconds}`);
}

/**
 * The long tail. Per episode: every task gets the test, which sleeps in `fraction` of the sandboxes. Per task:
 * the middle one of every 1/fraction tasks (neither first, which would favour streaming, nor last) gets it
 * sleeping in every sandbox. It runs wherever the visible tests run (the agent's `run_tests`, the verifier's
 * pristine suite) and changes no verdict. Returns the tasks and how many carry a sleeping test.
 */
function withLongTail(tasks: readonly Task[], tail: 'episode' | 'task', fraction: number, seconds: number): { tasks: Task[]; slow: number } {
  const withTest = (task: Task, share: number): Task => ({ ...task, visibleTests: { ...task.visibleTests, [SLOW_TEST]: slowTest(share, seconds) } });
  if (tail === 'episode') return { tasks: tasks.map((task) => withTest(task, fraction)), slow: tasks.length };
  const period = fraction > 0 ? Math.max(1, Math.round(1 / fraction)) : Number.POSITIVE_INFINITY;
  const shaped = tasks.map((task, i) => (i % period === Math.floor(period / 2) ? withTest(task, 1) : task));
  return { tasks: shaped, slow: shaped.filter((task, i) => task !== tasks[i]).length };
}

async function readValues<K extends TopicKey>(context: ProcessorContext, key: K): Promise<TopicValue<K>[]> {
  const raw: Buffer[] = [];
  await readTopic(context.kafka, { topic: context.names.name(key), onRecord: ({ value }) => void (value && raw.push(value)) });
  return Promise.all(raw.map((bytes) => context.serde.decode(key, bytes)));
}

interface SideResult {
  readonly rate: number;
  readonly utilisation: number;
  readonly learnerIdle: number;
  readonly lags: readonly number[];
  readonly staleDropped: number;
  readonly updates: number;
  readonly samples: number;
}

async function main(): Promise<void> {
  await stackUp((line) => log(line));
  const prepared = await prepareTasks({ file: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'), rejectsDir: mkdtempSync(join(tmpdir(), 'trialrun-bench-loop-')) });
  if (prepared.tasks.length < TASKS) throw new Error(`--tasks ${TASKS}: the bundle has ${prepared.tasks.length}`);
  const { tasks, slow } = withLongTail(prepared.tasks.slice(0, TASKS), TAIL, SLOW_FRACTION, SLOW_SECONDS);
  const pool = new DockerSandboxPool({ maxSandboxes: SANDBOXES });
  const kafka = createKafka({ clientId: 'bench-loop' });
  const tailLine = TAIL === 'episode' ? `${SLOW_FRACTION} of the sandboxes +${SLOW_SECONDS} s per pytest run` : `${slow} of ${TASKS} tasks +${SLOW_SECONDS} s per test run`;
  log(`${tasks.length} tasks (${tailLine}), G=${GROUP}, batch ${BATCH}, ${SANDBOXES} sandboxes, ${WORKERS} rollout workers x ${TASKS_PER_WORKER} tasks x ${EPISODES} episodes, ${VERIFIERS} verifiers, max ${MAX_TURNS} turns, staleness bound ${MAX_STALENESS}`);

  const run = async (schedule: 'streaming' | 'synchronous'): Promise<SideResult> => {
    const names = topicNames(`bench-loop-${schedule}-${randomUUID().slice(0, 8)}.`);
    const context: ProcessorContext = { kafka, serde: new TopicSerde(names), names };
    // Busy sandbox-seconds: the leases held, integrated over the run.
    let busyMs = 0;
    let last = performance.now();
    const sampler = setInterval(() => {
      const now = performance.now();
      busyMs += pool.stats.held * (now - last);
      last = now;
    }, 50);
    let summary;
    try {
      summary = await runLoop(context, {
        tasks,
        dataDir: mkdtempSync(join(tmpdir(), `trialrun-bench-loop-${schedule}-`)),
        pool,
        imageFor,
        checkpoints: new LocalCheckpointStore(mkdtempSync(join(tmpdir(), 'trialrun-bench-loop-ckpt-'))),
        schedule,
        groupSize: GROUP,
        batchSize: BATCH,
        maxTurns: MAX_TURNS,
        rolloutWorkers: WORKERS,
        tasksPerWorker: TASKS_PER_WORKER,
        concurrentEpisodes: EPISODES,
        verifiers: VERIFIERS,
        maxStaleness: MAX_STALENESS,
        // Task admission (the reference solution run 3 times) is once per task, not per sample: it is left out, as in bench:verifier.
        referenceRuns: 0,
      });
    } finally {
      clearInterval(sampler);
    }
    // Start-up (topics, group joins) precedes the first publish and is not the loop's working time; neither are its sandboxes.
    const activeS = summary.activeMs / 1000;
    const [trajectories, rewards, checkpoints] = await Promise.all([readValues(context, 'trajectories'), readValues(context, 'rewards'), readValues(context, 'policyCheckpoints')]);
    const versionOf = new Map(trajectories.map((t) => [t.trajectoryId, t.lineage.policyVersion ?? 0]));
    const published = checkpoints.map((c) => Date.parse(c.lineage.createdAt)).sort((a, b) => a - b);
    const lags = rewards
      .filter((r) => (r.disposition ?? 'learn') === 'learn' && (r.rescoreId ?? null) === null)
      .map((r) => published.filter((at) => at <= Date.parse(r.lineage.createdAt)).length - (versionOf.get(r.trajectoryId) ?? 0));
    return {
      rate: summary.trajectories / activeS,
      utilisation: busyMs / 1000 / (SANDBOXES * activeS),
      learnerIdle: 1 - summary.learnerBusyMs / summary.activeMs,
      lags,
      staleDropped: checkpoints.reduce((sum, c) => sum + c.metrics.staleDropped, 0),
      updates: checkpoints.length,
      samples: summary.trajectories,
    };
  };

  const results: Record<'streaming' | 'synchronous', SideResult[]> = { streaming: [], synchronous: [] };
  const side = (schedule: 'streaming' | 'synchronous') => async (): Promise<number> => {
    const result = await run(schedule);
    results[schedule].push(result);
    log(
      `${schedule}: ${result.samples} samples, ${result.rate.toFixed(3)} trajectories/s, sandboxes ${(100 * result.utilisation).toFixed(0)}% busy, learner idle ${(100 * result.learnerIdle).toFixed(1)}%, ` +
        `${result.updates} updates, staleness max ${Math.max(0, ...result.lags)} mean ${(result.lags.reduce((a, b) => a + b, 0) / Math.max(1, result.lags.length)).toFixed(2)}, ${result.staleDropped} dropped as stale; ${loadLine()}`,
    );
    return result.rate;
  };
  const report = new BenchReport(
    'loop',
    `npm run bench:loop -- --tasks ${TASKS} --rounds ${ROUNDS} --warmup ${WARMUP} --group-size ${GROUP} --batch-size ${BATCH} --sandboxes ${SANDBOXES} --workers ${WORKERS} --tasks-per-worker ${TASKS_PER_WORKER} --episodes ${EPISODES} --verifiers ${VERIFIERS} --max-turns ${MAX_TURNS} --max-staleness ${MAX_STALENESS} --slow-fraction ${SLOW_FRACTION} --slow-seconds ${SLOW_SECONDS} --tail ${TAIL}`,
  );
  try {
    const rate = await interleave({ streaming: side('streaming'), synchronous: side('synchronous') }, { rounds: ROUNDS, warmup: WARMUP });
    const counted = (schedule: 'streaming' | 'synchronous'): SideResult[] => results[schedule].slice(WARMUP);
    const shape = `${TASKS * GROUP} samples a round, ${tailLine}, ${SANDBOXES} sandboxes, staleness bound ${MAX_STALENESS}`;
    report.compare({ metric: `trajectories per second, ${shape}`, unit: 'trajectories/s', ours: rate.streaming, baseline: rate.synchronous, baselineName: 'synchronous batch loop, same processors', higherIsBetter: true, goal: '>= 2.8x' });
    report.compare({ metric: `sandbox utilisation (busy / available sandbox-seconds), ${shape}`, unit: 'fraction', ours: counted('streaming').map((r) => r.utilisation), baseline: counted('synchronous').map((r) => r.utilisation), baselineName: 'synchronous batch loop', higherIsBetter: true });
    report.compare({ metric: `learner idle fraction, ${shape}`, unit: 'fraction', ours: counted('streaming').map((r) => r.learnerIdle), baseline: counted('synchronous').map((r) => r.learnerIdle), baselineName: 'synchronous batch loop', higherIsBetter: false });
    for (const schedule of ['streaming', 'synchronous'] as const) {
      const lags = counted(schedule).flatMap((r) => r.lags);
      const lagFigures = figures(lags.length ? lags : [0]);
      console.log(`${schedule} staleness of trained samples: max ${lagFigures.max}, median ${lagFigures.median}, mean ${(lags.reduce((a, b) => a + b, 0) / Math.max(1, lags.length)).toFixed(2)} over ${lags.length}; dropped as stale ${counted(schedule).reduce((sum, r) => sum + r.staleDropped, 0)}`);
    }
    report.save();
  } finally {
    await pool.close();
  }
}

await main();
