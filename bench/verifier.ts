/**
 * Verifier benchmark: `npm run bench:verifier [-- --tasks 6 --rounds 5 --concurrency 2 --backend docker]`.
 *
 * Verifications per second at a fixed concurrency against the baseline of the same tests run bare in the
 * same kind of sandbox, measured in the same run, round by round in alternating order (ABBA) so drift from
 * other load on the machine hits both sides alike:
 *   bare      acquire, write the solution and the tests, `python3 -m pytest --junitxml` on the same tests,
 *             read the report back, release: what any verifier must at least do;
 *   verifier  Verifier.check: screening, the trusted runner with its static scan, the witness plugin and
 *             canaries, the straggler sweep, and judging (task admission is per task, not per run: excluded).
 * Prints each round and min / median / max (bench/harness.ts); the ratio bare/verifier is the verifier's overhead.
 */
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../cli/paths.js';
import { DockerSandboxPool, ProcessSandboxPool, type SandboxPool } from '../connectors/sandbox/index.js';
import '../envs/index.js';
import { prepareTasks } from '../pipelines/jobs/task-job/index.js';
import { Verifier, VERIFIER_RECIPE } from '../pipelines/verifier/index.js';
import type { Task } from '../schemas/index.js';
import { imageFor } from '../stack/index.js';
import { benchArgs, BenchReport, interleave, median } from './harness.js';

const cli = benchArgs(
  'bench:verifier',
  'npm run bench:verifier [-- --tasks 6 --rounds 5 --concurrency 2 --backend docker]',
  {
    tasks: { type: 'string', default: '6' },
    rounds: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '2' },
    backend: { type: 'string', default: 'docker' },
  },
);
const { values } = cli;
const TASKS = cli.int('tasks');
const ROUNDS = cli.int('rounds');
const CONCURRENCY = cli.int('concurrency');
if (values.backend !== 'docker' && values.backend !== 'process') cli.fail(`--backend takes docker or process, got ${values.backend}`);

const log = (line: string): void => void process.stderr.write(`# ${line}\n`);

async function inLanes<T>(items: readonly T[], lanes: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(lanes, items.length) }, async () => {
    while (next < items.length) await run(items[next++]!);
  }));
}

/** The same tests, run bare in a fresh sandbox, with the JUnit report read back. */
async function bareRun(pool: SandboxPool, task: Task): Promise<boolean> {
  const sandbox = await pool.acquire({ image: imageFor(VERIFIER_RECIPE), runId: 'bench-verifier', taskId: task.taskId });
  try {
    await sandbox.writeFiles({ ...task.files, ...task.referenceSolution, ...task.visibleTests, ...task.hiddenTests });
    const tests = Object.keys({ ...task.visibleTests, ...task.hiddenTests }).sort();
    const exec = await sandbox.exec(['python3', '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '--junitxml=/tmp/bench/report.xml', ...tests], { timeoutMs: 20_000 });
    const report = await sandbox.readFiles(['report.xml'], '/tmp/bench');
    return exec.exitCode === 0 && (report['report.xml'] ?? '').includes('<testsuite');
  } finally {
    await sandbox.release();
  }
}

async function main(): Promise<void> {
  const prepared = await prepareTasks({ file: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'), rejectsDir: join(tmpdir(), `trialrun-bench-verifier-${randomUUID()}`) });
  const tasks = prepared.tasks.filter((t) => t.referenceSolution !== null).slice(0, TASKS);
  const pool: SandboxPool = values.backend === 'docker' ? new DockerSandboxPool() : new ProcessSandboxPool();
  const byId = new Map(tasks.map((t) => [t.taskId, t]));
  const verifier = new Verifier({ runId: 'bench-verifier', pool, imageFor, tasks: { get: (id) => byId.get(id)! }, referenceRuns: 0 });
  const signal = new AbortController().signal;
  try {
    log(`verifier ${await verifier.version()}, ${tasks.length} tasks, ${ROUNDS} rounds, concurrency ${CONCURRENCY}, ${values.backend} sandboxes, ${process.platform} ${process.arch}`);
    const expected = new Map<string, readonly string[]>();
    for (const task of tasks) expected.set(task.taskId, (await verifier.admit(task, signal)).expected);

    const sides = {
      bare: async (task: Task) => {
        if (!(await bareRun(pool, task))) throw new Error(`bare run of ${task.taskId}'s reference did not pass`);
      },
      verifier: async (task: Task) => {
        const checked = await verifier.check(task, { ...task.files, ...task.referenceSolution }, expected.get(task.taskId)!, signal);
        if (!checked.passed) throw new Error(`the verifier failed ${task.taskId}'s reference: ${JSON.stringify(checked.hacks)} ${checked.failure} ${checked.detail}`);
      },
    };
    const latency: Record<keyof typeof sides, number[]> = { bare: [], verifier: [] };
    const measure = (side: keyof typeof sides) => async (): Promise<number> => {
      const started = performance.now();
      await inLanes(tasks, CONCURRENCY, async (task) => {
        const t0 = performance.now();
        await sides[side](task);
        latency[side].push(performance.now() - t0);
      });
      return tasks.length / ((performance.now() - started) / 1000);
    };
    const report = new BenchReport('verifier', `npm run bench:verifier -- --tasks ${TASKS} --rounds ${ROUNDS} --concurrency ${CONCURRENCY} --backend ${values.backend}`);
    const rate = await interleave(
      { bare: measure('bare'), verifier: measure('verifier') },
      { rounds: ROUNDS, onRound: (round, r) => log(`round ${round}: bare ${r.bare!.toFixed(2)}/s, verifier ${r.verifier!.toFixed(2)}/s, ratio ${(r.verifier! / r.bare!).toFixed(2)}`) },
    );
    report.compare({
      metric: `verifications per second, ${values.backend} sandboxes, concurrency ${CONCURRENCY}, ${tasks.length} tasks a round`,
      unit: 'verifications/s',
      ours: rate.verifier,
      baseline: rate.bare,
      baselineName: 'bare sandbox pytest + JUnit',
      higherIsBetter: true,
    });
    console.log(`median latency: bare ${median(latency.bare).toFixed(0)} ms, verifier ${median(latency.verifier).toFixed(0)} ms (warm-up included)`);
    report.save();
  } finally {
    await pool.close();
  }
}

await main();
