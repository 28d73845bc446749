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
 *
 * `--trace <file | store | store:<data dir>>` (`npm run bench:loop-trace`) measures the scheduler instead of this
 * machine's CPU, and says so in its output (a simulation): episodes replay the turn latencies of recorded LLM
 * episodes as waits (bench/trace-replay.ts) with cheap scripted moves, as a rollout waits on a remote model server,
 * and no long-tail test is added (the trace's own tail is the tail). Besides the figures above it reports the
 * analytic bound for the trace, what a perfect scheduler would reach on the same work (perfectSchedulerRate in
 * bench/trace.ts, per side and round from the replayed waits and the measured tool and verification time), and
 * what the synchronous loop's idealised model reaches on the same episodes. Figures go to
 * bench/results/loop-trace.json.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dataDir, repoRoot } from '../cli/paths.js';
import { LocalCheckpointStore } from '../connectors/checkpoints/index.js';
import { createKafka, readTopic } from '../connectors/kafka/index.js';
import { TopicSerde } from '../connectors/registry/index.js';
import { DockerSandboxPool } from '../connectors/sandbox/index.js';
import '../envs/index.js';
import { prepareTasks } from '../pipelines/jobs/task-job/index.js';
import { runLoop } from '../pipelines/loop/index.js';
import { registerPolicyKind } from '../policies/index.js';
import type { ProcessorContext } from '../pipelines/runtime/index.js';
import { topicNames, type Task, type TopicKey, type TopicValue } from '../schemas/index.js';
import { imageFor, stackUp } from '../stack/index.js';
import { benchArgs, BenchReport, figures, interleave, loadLine, median } from './harness.js';
import { MIN_REPLAY_TURNS, TRACE_REPLAY_POLICY, TraceReplay, replayTurns, turnWaitsMs } from './trace-replay.js';
import { loadTrace, perfectSchedulerRate, replayedEpisodes, synchronousModelRate, traceShape, type Trace } from './trace.js';

const cli = benchArgs(
  'bench:loop',
  [
    'npm run bench:loop [-- --tasks 20 --rounds 3]',
    'npm run bench:loop-trace',
    'npm run bench:loop -- --trace <file | store | store:<data dir>> [--trace-speed 2]',
  ],
  {
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
    trace: { type: 'string' },
    'trace-speed': { type: 'string', default: '1' },
  },
);
const { values } = cli;
const TASKS = cli.int('tasks');
const ROUNDS = cli.int('rounds');
const WARMUP = cli.int('warmup', 0);
const GROUP = cli.int('group-size');
const BATCH = cli.int('batch-size');
const SANDBOXES = cli.int('sandboxes');
const WORKERS = cli.int('workers');
const TASKS_PER_WORKER = cli.int('tasks-per-worker');
const EPISODES = cli.int('episodes');
const VERIFIERS = cli.int('verifiers');
const MAX_TURNS = cli.int('max-turns');
const MAX_STALENESS = cli.int('max-staleness', 0);
const SLOW_FRACTION = Number(values['slow-fraction']);
const SLOW_SECONDS = Number(values['slow-seconds']);
if (!(SLOW_FRACTION >= 0 && SLOW_FRACTION <= 1)) cli.fail(`--slow-fraction takes a number from 0 to 1, got ${values['slow-fraction']}`);
const TAIL = cli.choice('tail', ['episode', 'task'] as const);
if (!(SLOW_SECONDS >= 0 && SLOW_SECONDS <= 15)) cli.fail(`--slow-seconds takes 0 to 15 (a verifier test run has 20 s), got ${values['slow-seconds']}`);

const TRACE_SPEED = Number(values['trace-speed']);
if (!(TRACE_SPEED > 0 && Number.isFinite(TRACE_SPEED))) cli.fail(`--trace-speed takes a number > 0, got ${values['trace-speed']}`);
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
  /** With --trace: what a perfect scheduler reaches on this side's work (perfectSchedulerRate), samples/s. */
  readonly bound: number | null;
  /** With --trace: the same with the trace's waits alone (tool calls and verification taken as free). */
  readonly traceOnlyBound: number | null;
  /** With --trace: mean seconds per sample of replayed model time, tool calls in the sandbox, and verification. */
  readonly perSample: { readonly waitS: number; readonly toolS: number; readonly verifyS: number } | null;
}

async function main(): Promise<void> {
  // Read before the stack starts: a trace that is not there stops the bench at once.
  const trace: Trace | null = values.trace === undefined ? null : await loadTrace(values.trace, dataDir());
  const replay = trace ? new TraceReplay(trace, { speed: TRACE_SPEED }) : null;
  if (trace && MAX_TURNS < MIN_REPLAY_TURNS) cli.fail(`--trace: a replayed episode takes at least ${MIN_REPLAY_TURNS} turns; --max-turns ${MAX_TURNS} is too few`);
  if (trace && traceShape(trace).turns.max > MAX_TURNS) log(`--max-turns ${MAX_TURNS} is fewer than the trace's longest episode (${traceShape(trace).turns.max} turns): the waits of turns past it are not replayed (and not in the bound)`);
  if (replay) registerPolicyKind(replay.kind());
  await stackUp((line) => log(line));
  const prepared = await prepareTasks({ file: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'), rejectsDir: mkdtempSync(join(tmpdir(), 'trialrun-bench-loop-')) });
  if (prepared.tasks.length < TASKS) throw new Error(`--tasks ${TASKS}: the bundle has ${prepared.tasks.length}`);
  // With a trace the tail is the trace's: no sleeping test is added.
  const { tasks, slow } = trace ? { tasks: prepared.tasks.slice(0, TASKS), slow: 0 } : withLongTail(prepared.tasks.slice(0, TASKS), TAIL, SLOW_FRACTION, SLOW_SECONDS);
  const pool = new DockerSandboxPool({ maxSandboxes: SANDBOXES });
  const kafka = createKafka({ clientId: 'bench-loop' });
  const shape = trace ? traceShape(trace) : null;
  const tailLine =
    trace && shape
      ? `SIMULATION: trace replay of ${trace.episodes.length} recorded llm episodes (${trace.source}${TRACE_SPEED === 1 ? '' : `, ${TRACE_SPEED}x speed`}; model time per episode mean ${(shape.waitS.mean / TRACE_SPEED).toFixed(1)} s, p90 ${(shape.waitS.p90 / TRACE_SPEED).toFixed(1)} s, max ${(shape.waitS.max / TRACE_SPEED).toFixed(1)} s)`
      : TAIL === 'episode'
        ? `${SLOW_FRACTION} of the sandboxes +${SLOW_SECONDS} s per pytest run`
        : `${slow} of ${TASKS} tasks +${SLOW_SECONDS} s per test run`;
  log(`${tasks.length} tasks (${tailLine}), G=${GROUP}, batch ${BATCH}, ${SANDBOXES} sandboxes, ${WORKERS} rollout workers x ${TASKS_PER_WORKER} tasks x ${EPISODES} episodes, ${VERIFIERS} verifiers, max ${MAX_TURNS} turns, staleness bound ${MAX_STALENESS}`);
  if (trace && shape) {
    log(`SIMULATION: no model runs; each episode waits out a recorded episode's turn latencies (${shape.turns.mean.toFixed(1)} turns and ${shape.replyTokens.mean.toFixed(0)} reply tokens a turn on average, max/mean model time ${shape.tail.toFixed(2)}) and acts with cheap scripted moves`);
    for (const line of trace.header) log(`trace: ${line}`);
  }

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
    // Each side replays the same episodes of the trace, from its first.
    replay?.reset();
    try {
      summary = await runLoop(context, {
        tasks,
        dataDir: mkdtempSync(join(tmpdir(), `trialrun-bench-loop-${schedule}-`)),
        pool,
        imageFor,
        checkpoints: new LocalCheckpointStore(mkdtempSync(join(tmpdir(), 'trialrun-bench-loop-ckpt-'))),
        schedule,
        ...(replay ? { policyId: TRACE_REPLAY_POLICY } : {}),
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
    const [trajectories, rewards, checkpoints, verifications] = await Promise.all([
      readValues(context, 'trajectories'),
      readValues(context, 'rewards'),
      readValues(context, 'policyCheckpoints'),
      replay ? readValues(context, 'verifications') : Promise.resolve([]),
    ]);
    const versionOf = new Map(trajectories.map((t) => [t.trajectoryId, t.lineage.policyVersion ?? 0]));
    const published = checkpoints.map((c) => Date.parse(c.lineage.createdAt)).sort((a, b) => a - b);
    const lags = rewards
      .filter((r) => (r.disposition ?? 'learn') === 'learn' && (r.rescoreId ?? null) === null)
      .map((r) => published.filter((at) => at <= Date.parse(r.lineage.createdAt)).length - (versionOf.get(r.trajectoryId) ?? 0));
    let bound: number | null = null;
    let traceOnlyBound: number | null = null;
    let perSample: SideResult['perSample'] = null;
    if (replay) {
      // The episodes this side replayed (handed out in the trace's order), with the turns the loop let them take.
      const replayed = replayedEpisodes(replay.trace, replay.handedOut);
      const waitS = replayed.reduce((sum, e) => sum + turnWaitsMs(e, replayTurns(e, MAX_TURNS), replay.speed).reduce((a, b) => a + b, 0), 0) / 1000 / Math.max(1, replayed.length);
      // Time in the sandbox per episode: its start and its tool calls (Trajectory.sandboxMs); per sample, its verification.
      const toolS = trajectories.reduce((sum, t) => sum + t.sandboxMs, 0) / 1000 / Math.max(1, trajectories.length);
      const verifyS = verifications.reduce((sum, v) => sum + v.durationMs, 0) / 1000 / Math.max(1, verifications.length);
      const slots = WORKERS * TASKS_PER_WORKER * EPISODES;
      perSample = { waitS, toolS, verifyS };
      bound = perfectSchedulerRate({ sandboxes: SANDBOXES, episodeSlots: slots, waitS, toolS, verifyS });
      traceOnlyBound = perfectSchedulerRate({ sandboxes: SANDBOXES, episodeSlots: slots, waitS, toolS: 0, verifyS: 0 });
    }
    return {
      bound,
      traceOnlyBound,
      perSample,
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
        `${result.updates} updates, staleness max ${Math.max(0, ...result.lags)} mean ${(result.lags.reduce((a, b) => a + b, 0) / Math.max(1, result.lags.length)).toFixed(2)}, ${result.staleDropped} dropped as stale` +
        (result.bound !== null && result.perSample
          ? `; per sample ${result.perSample.waitS.toFixed(1)} s replayed model time + ${result.perSample.toolS.toFixed(1)} s tools + ${result.perSample.verifyS.toFixed(1)} s verification, perfect-scheduler bound ${result.bound.toFixed(3)} trajectories/s (${(result.rate / result.bound).toFixed(2)} of it)`
          : '') +
        `; ${loadLine()}`,
    );
    return result.rate;
  };
  // With a trace no sleeping test is added, so the tail flags would only mislead a reader of the command.
  const tailFlags = trace ? '' : ` --slow-fraction ${SLOW_FRACTION} --slow-seconds ${SLOW_SECONDS} --tail ${TAIL}`;
  const traceFlags = trace ? ` --trace ${values.trace} --trace-speed ${TRACE_SPEED}` : '';
  const report = new BenchReport(
    // The simulation's figures are saved apart, so that the CPU-bound figure stays in the table beside them.
    trace ? 'loop-trace' : 'loop',
    `npm run bench:loop -- --tasks ${TASKS} --rounds ${ROUNDS} --warmup ${WARMUP} --group-size ${GROUP} --batch-size ${BATCH} --sandboxes ${SANDBOXES} --workers ${WORKERS} --tasks-per-worker ${TASKS_PER_WORKER} --episodes ${EPISODES} --verifiers ${VERIFIERS} --max-turns ${MAX_TURNS} --max-staleness ${MAX_STALENESS}${tailFlags}${traceFlags}`,
  );
  try {
    const rate = await interleave({ streaming: side('streaming'), synchronous: side('synchronous') }, { rounds: ROUNDS, warmup: WARMUP });
    const counted = (schedule: 'streaming' | 'synchronous'): SideResult[] => results[schedule].slice(WARMUP);
    const staleness = (schedule: 'streaming' | 'synchronous'): { max: number; mean: number; n: number; dropped: number } => {
      const lags = counted(schedule).flatMap((r) => r.lags);
      return { max: Math.max(0, ...lags), mean: lags.reduce((a, b) => a + b, 0) / Math.max(1, lags.length), n: lags.length, dropped: counted(schedule).reduce((sum, r) => sum + r.staleDropped, 0) };
    };
    for (const schedule of ['streaming', 'synchronous'] as const) {
      const lags = counted(schedule).flatMap((r) => r.lags);
      const lagFigures = figures(lags.length ? lags : [0]);
      console.log(`${schedule} staleness of trained samples: max ${lagFigures.max}, median ${lagFigures.median}, mean ${staleness(schedule).mean.toFixed(2)} over ${lags.length}; dropped as stale ${staleness(schedule).dropped}`);
    }
    const stale = (schedule: 'streaming' | 'synchronous'): string => {
      const s = staleness(schedule);
      return `max ${s.max} mean ${s.mean.toFixed(2)} of ${s.n} trained, ${s.dropped} dropped`;
    };
    // With a trace the staleness goes into the figure's own line: the goal is a ratio at staleness <= 1.
    const stalenessNote = trace ? `, staleness (versions behind) streaming ${stale('streaming')}, synchronous ${stale('synchronous')}` : '';
    // What each figure measures goes into its line: the simulation the scheduler, the other this machine's CPU.
    const measures = trace ? '' : 'CPU-bound on this machine (real test runs in every sandbox), ';
    const shape = `${measures}${TASKS * GROUP} samples a round, ${tailLine}, ${SANDBOXES} sandboxes, staleness bound ${MAX_STALENESS}`;
    report.compare({ metric: `trajectories per second, ${shape}${stalenessNote}`, unit: 'trajectories/s', ours: rate.streaming, baseline: rate.synchronous, baselineName: 'synchronous batch loop, same processors', higherIsBetter: true, goal: trace ? '>= 2.5x' : '>= 2.8x' });
    report.compare({ metric: `sandbox utilisation (busy / available sandbox-seconds), ${shape}`, unit: 'fraction', ours: counted('streaming').map((r) => r.utilisation), baseline: counted('synchronous').map((r) => r.utilisation), baselineName: 'synchronous batch loop', higherIsBetter: true });
    if (trace) {
      report.compare({ metric: `learner utilisation (time handling records / working time), ${shape}`, unit: 'fraction', ours: counted('streaming').map((r) => 1 - r.learnerIdle), baseline: counted('synchronous').map((r) => 1 - r.learnerIdle), baselineName: 'synchronous batch loop', higherIsBetter: true });
      const streaming = counted('streaming');
      report.compare({
        metric: `streaming trajectories per second against the analytic bound for the trace (perfect scheduler: min(sandboxes / (replayed model time + tool + verification time per sample), episode slots / (model + tool time per episode)), bench/trace.ts), ${shape}`,
        unit: 'trajectories/s',
        ours: streaming.map((r) => r.rate),
        baseline: streaming.map((r) => r.bound!),
        baselineName: 'perfect scheduler, same work',
        higherIsBetter: true,
        goal: '>= 0.9x',
      });
      const perSample = (key: 'waitS' | 'toolS' | 'verifyS'): number => median(streaming.map((r) => r.perSample![key]));
      console.log(
        `SIMULATION, per sample (streaming, median of rounds): ${perSample('waitS').toFixed(2)} s replayed model time, ${perSample('toolS').toFixed(2)} s in the sandbox for tools, ${perSample('verifyS').toFixed(2)} s verification; ` +
          `bound with the trace's waits alone ${median(streaming.map((r) => r.traceOnlyBound!)).toFixed(3)} trajectories/s`,
      );
      // What the trace allows at best: the synchronous loop idealised (greedy on the pool, no overhead but the same per-sample work).
      const episodes = replayedEpisodes(trace, TASKS * GROUP).map((e) => ({ ...e, turns: e.turns.slice(0, replayTurns(e, MAX_TURNS)).map((t) => ({ ...t, latencyMs: t.latencyMs / TRACE_SPEED })) }));
      const syncModel = synchronousModelRate(episodes, BATCH, SANDBOXES, perSample('toolS') + perSample('verifyS'));
      const bound = median(streaming.map((r) => r.bound!));
      console.log(`SIMULATION, idealised synchronous loop on the same episodes: ${syncModel.toFixed(3)} trajectories/s, so the most streaming can gain on this trace is ${(bound / syncModel).toFixed(2)}x (bound / idealised synchronous)`);
    } else {
      report.compare({ metric: `learner idle fraction, ${shape}`, unit: 'fraction', ours: counted('streaming').map((r) => r.learnerIdle), baseline: counted('synchronous').map((r) => r.learnerIdle), baselineName: 'synchronous batch loop', higherIsBetter: false });
    }
    report.save();
  } finally {
    await pool.close();
  }
}

await main();
