/**
 * Sandbox benchmark: `npm run bench:sandbox [-- --backends docker,process --sections latency,pytest,cycles --samples 20
 *   --cycles 200 --runs 16 --rounds 3]`.
 *
 * Every figure stands beside a baseline measured in the same run on the same machine, a bare local process, in
 * rounds that interleave every setup (bench/harness.ts: min / median / max over the rounds, load printed):
 *   1. acquire -> first command latency (p50, p95), warm and cold, vs spawning `true`;
 *   2. pytest on a small module at concurrency 1, 2, 4, 8: sandboxed runs per second / bare runs per second,
 *      with the same Debian python3 and pytest on both sides; in a fresh sandbox per run, in one sandbox per
 *      worker, and there forked from a warm interpreter that holds pytest (ExecOptions.preload);
 *   3. create+destroy cycles per second (acquire + release, warm pool refilling behind), with the host CPU each
 *      cycle costs, leak and memory checks, vs bare spawn+exit of `true`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { DockerSandboxPool, ensureDebianProgram, ProcessSandboxPool, type AgentSandboxPool, type PoolOptions, type Sandbox } from '../connectors/sandbox/index.js';
import { dockerComponent } from '../stack/docker.js';
import { imagesComponent } from '../stack/images.js';
import { imageFor } from '../stack/index.js';
import { benchArgs, BenchReport, interleave, percentile } from './harness.js';

const cli = benchArgs(
  'bench:sandbox',
  'npm run bench:sandbox [-- --backends docker,process --sections latency,pytest,cycles --samples 20 --cycles 200 --runs 16 --rounds 3]',
  {
    backends: { type: 'string', default: 'docker,process' },
    samples: { type: 'string', default: '20' },
    cycles: { type: 'string', default: '200' },
    runs: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '3' },
    sections: { type: 'string', default: 'latency,pytest,cycles' },
  },
);
const { values } = cli;
const BACKENDS = cli.choices('backends', ['docker', 'process'] as const);
const positive = (name: 'samples' | 'cycles' | 'runs' | 'rounds', min = 1): number => cli.int(name, min);
const SAMPLES = positive('samples');
const CYCLES = positive('cycles');
const RUNS = positive('runs');
const ROUNDS = positive('rounds', 3);
const report = new BenchReport('sandbox', `npm run bench:sandbox -- --backends ${values.backends} --sections ${values.sections} --samples ${values.samples} --cycles ${values.cycles} --runs ${values.runs} --rounds ${values.rounds}`);
const SECTIONS = new Set<string>(cli.choices('sections', ['latency', 'pytest', 'cycles'] as const));
const CONCURRENCY = [1, 2, 4, 8];
const PYTHON = '/usr/bin/python3';
const PYTEST = ['-m', 'pytest', '-q', '-p', 'no:cacheprovider'];
const MODULE = {
  'calc.py': 'def add(a, b):\n    return a + b\n\n\ndef mean(xs):\n    return sum(xs) / len(xs)\n',
  'test_calc.py':
    'import pytest\nfrom calc import add, mean\n\n\n@pytest.mark.parametrize("a,b,c", [(1, 2, 3), (0, 0, 0), (-1, 1, 0), (2.5, 2.5, 5.0)])\ndef test_add(a, b, c):\n    assert add(a, b) == c\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n\n\ndef test_mean_empty():\n    with pytest.raises(ZeroDivisionError):\n        mean([])\n',
};

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const log = (line: string): void => void process.stderr.write(`# ${line}\n`);
const ms = (value: number): string => `${value.toFixed(1)} ms`;
/**
 * CPU time the whole host has spent busy, in ms (all cores, from /proc/stat). A fresh sandbox's real price
 * is the engine's work (dockerd, containerd, runc) more than its latency, and that work is on other processes.
 */
function hostCpuMs(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const idle = fields[3]! + fields[4]!; // idle + iowait
  const ticksPerSecond = 100; // USER_HZ on Linux
  return ((fields.reduce((sum, value) => sum + value, 0) - idle) / ticksPerSecond) * 1000;
}
const row = (...cells: string[]): void => {
  process.stdout.write(`${cells.join(' | ')}\n`);
};

function runBare(command: string, args: readonly string[], cwd?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(code) : reject(new Error(`${command} ${args.join(' ')} exited ${code}: ${stderr}`))));
  });
}

/** Runs `total` tasks with `concurrency` workers; returns completed runs per second. */
async function throughput(total: number, concurrency: number, task: (worker: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    [...Array(concurrency).keys()].map(async (worker) => {
      while (next < total) {
        next++;
        await task(worker);
      }
    }),
  );
  return (total / (performance.now() - started)) * 1000;
}

function makePool(backend: string, options: PoolOptions): AgentSandboxPool {
  return backend === 'docker' ? new DockerSandboxPool(options) : new ProcessSandboxPool(options);
}

/** Waits until the pool has nothing starting or being destroyed, so a sample measures one thing only. */
async function quiesce(pool: AgentSandboxPool, ready: number): Promise<void> {
  while (pool.stats.creating > 0 || pool.stats.pending > 0 || pool.stats.ready < ready) await sleep(20);
}

/** p50 of `count` acquire -> `true` -> release samples, one round's figure for one setup. */
async function latencyRound(count: number, sample: () => Promise<number>): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) samples.push(await sample());
  return percentile(samples, 50);
}

async function firstCommandLatency(image: string): Promise<void> {
  process.stdout.write(`\n## acquire -> first command (\`true\`), p50 of ${SAMPLES} samples a round, ${ROUNDS} interleaved rounds\n\n`);
  const setups: Record<string, () => Promise<number>> = {
    bare: () =>
      latencyRound(SAMPLES, async () => {
        const started = performance.now();
        await runBare('true', []);
        return performance.now() - started;
      }),
  };
  const pools: AgentSandboxPool[] = [];
  for (const backend of BACKENDS) {
    for (const mode of ['warm', 'cold'] as const) {
      const warmSize = mode === 'warm' ? 2 : 0;
      const pool = makePool(backend, { warmSize });
      pools.push(pool);
      await (await pool.acquire({ image, runId: 'bench', taskId: 'prime' })).release();
      // Cold Docker starts take about a second each on 2 cores; a third of the samples say enough.
      const count = mode === 'cold' && backend === 'docker' ? Math.max(5, Math.ceil(SAMPLES / 3)) : SAMPLES;
      setups[`${backend} ${mode}`] = () =>
        latencyRound(count, async () => {
          await quiesce(pool, warmSize);
          const started = performance.now();
          const sandbox = await pool.acquire({ image, runId: 'bench', taskId: 'latency' });
          await sandbox.exec(['true']);
          const elapsed = performance.now() - started;
          await sandbox.release();
          return elapsed;
        });
    }
  }
  const p50s = await interleave(setups, { rounds: ROUNDS });
  await Promise.all(pools.map((pool) => pool.close()));
  for (const name of Object.keys(setups).filter((name) => name !== 'bare')) {
    report.compare({ metric: `acquire -> first command, ${name}, p50`, unit: 'ms', ours: p50s[name]!, baseline: p50s.bare!, baselineName: 'bare spawn `true`', higherIsBetter: false });
  }
}

async function pytestThroughput(image: string, python: string): Promise<void> {
  process.stdout.write(`\n## pytest on a small module (${Object.keys(MODULE).join(', ')}), runs per second, median of ${ROUNDS} interleaved rounds\n\n`);
  row('concurrency', 'bare', ...BACKENDS.flatMap((b) => [`${b}, fresh sandbox per run`, 'ratio', `${b}, one sandbox per worker`, 'ratio', `${b}, same, pytest preloaded`, 'ratio']));
  row('---', '---', ...BACKENDS.flatMap(() => ['---', '---', '---', '---', '---', '---']));
  const dirs = CONCURRENCY.map(() => {
    const dir = mkdtempSync(join(tmpdir(), 'trialrun-bench-pytest-'));
    for (const [name, content] of Object.entries(MODULE)) writeFileSync(join(dir, name), content);
    return dir;
  });
  const bareRun = (worker: number) => runBare(python, PYTEST, dirs[worker % dirs.length]).then(() => undefined);
  await bareRun(0);
  for (const concurrency of CONCURRENCY) {
    const total = Math.max(RUNS, 2 * concurrency);
    // Each setup is measured once per round, rounds interleaved, so that load from elsewhere on the machine
    // lands on all of them alike; the table shows each setup's median.
    const setups: Array<{ name: string; measure: () => Promise<number>; close?: () => Promise<void> }> = [
      { name: 'bare', measure: () => throughput(total, concurrency, bareRun) },
    ];
    for (const backend of BACKENDS) {
      const pool = makePool(backend, { warmSize: concurrency });
      const run = async (sandbox: Sandbox, preload: readonly string[] = []): Promise<void> => {
        const result = await sandbox.exec([python, ...PYTEST], { preload });
        if (result.exitCode !== 0) throw new Error(`pytest in a ${backend} sandbox failed: ${result.stdout}${result.stderr}`);
      };
      const fresh = async (): Promise<void> => {
        const sandbox = await pool.acquire({ image, runId: 'bench', taskId: 'pytest' });
        try {
          await sandbox.writeFiles(MODULE);
          await run(sandbox);
        } finally {
          await sandbox.release();
        }
      };
      await fresh();
      const held = await Promise.all([...Array(concurrency).keys()].map(() => pool.acquire({ image, runId: 'bench', taskId: 'pytest-held' })));
      await Promise.all(held.map((sandbox) => sandbox.writeFiles(MODULE)));
      setups.push(
        {
          name: `${backend} fresh`,
          measure: async () => {
            await quiesce(pool, concurrency);
            return throughput(total, concurrency, fresh);
          },
        },
        {
          name: `${backend} held`,
          measure: async () => {
            await quiesce(pool, concurrency);
            return throughput(total, concurrency, (worker) => run(held[worker]!));
          },
        },
        {
          name: `${backend} warm`,
          measure: async () => {
            await quiesce(pool, concurrency);
            return throughput(total, concurrency, (worker) => run(held[worker]!, ['pytest']));
          },
          close: async () => {
            await Promise.all(held.map((sandbox) => sandbox.release()));
            await pool.close();
          },
        },
      );
    }
    const results = await interleave(Object.fromEntries(setups.map((setup) => [setup.name, setup.measure])), { rounds: ROUNDS, warmup: 0 });
    for (const setup of setups) await setup.close?.();
    const median = (name: string): number => percentile(results[name]!, 50);
    const bare = median('bare');
    const cells = [String(concurrency), bare.toFixed(2)];
    for (const backend of BACKENDS) {
      for (const mode of ['fresh', 'held', 'warm']) cells.push(median(`${backend} ${mode}`).toFixed(2), `${(median(`${backend} ${mode}`) / bare).toFixed(2)}x`);
    }
    row(...cells);
    if (concurrency === 2) {
      for (const backend of BACKENDS) {
        for (const mode of ['fresh', 'held', 'warm']) {
          const what = { fresh: 'a fresh sandbox per run', held: 'one sandbox per worker', warm: 'one sandbox per worker, pytest preloaded' }[mode];
          report.compare({ metric: `pytest runs, concurrency 2, ${backend}, ${what}`, unit: 'runs/s', ours: results[`${backend} ${mode}`]!, baseline: results.bare!, baselineName: 'bare processes', higherIsBetter: true });
        }
      }
    }
  }
}

async function createDestroyRate(image: string): Promise<void> {
  process.stdout.write(`\n## create + destroy: ${CYCLES} acquire/release cycles a round (warm pool of 4 refilling behind), ${ROUNDS} interleaved rounds\n\n`);
  row('setup', 'host CPU per cycle (last round)', 'leaked', 'executor heap growth', 'executor RSS growth');
  row('---', '---', '---', '---', '---');
  const cpuPerCycle = new Map<string, number>();
  const setups: Record<string, () => Promise<number>> = {
    bare: async () => {
      const started = performance.now();
      const cpu = hostCpuMs();
      for (let i = 0; i < CYCLES; i++) await runBare('true', []);
      cpuPerCycle.set('bare', (hostCpuMs() - cpu) / CYCLES);
      return (CYCLES / (performance.now() - started)) * 1000;
    },
  };
  const pools = new Map<string, AgentSandboxPool>();
  const memory = new Map<string, { heap: number; rss: number }>();
  for (const backend of BACKENDS) {
    const pool = makePool(backend, { warmSize: 4 });
    pools.set(backend, pool);
    await (await pool.acquire({ image, runId: 'bench', taskId: 'prime' })).release();
    await quiesce(pool, 4);
    gc();
    memory.set(backend, { heap: process.memoryUsage().heapUsed, rss: process.memoryUsage().rss });
    setups[backend] = async () => {
      await quiesce(pool, 4);
      const started = performance.now();
      const cpu = hostCpuMs();
      for (let i = 0; i < CYCLES; i++) {
        const sandbox = await pool.acquire({ image, runId: 'bench', taskId: `cycle-${i}` });
        await sandbox.release();
      }
      const rate = (CYCLES / (performance.now() - started)) * 1000;
      await quiesce(pool, 4); // the last replacements' cost belongs to the cycles
      cpuPerCycle.set(backend, (hostCpuMs() - cpu) / CYCLES);
      log(`${backend}: ${CYCLES} cycles at ${rate.toFixed(1)}/s`);
      return rate;
    };
  }
  const rates = await interleave(setups, { rounds: ROUNDS, warmup: 0 });
  row('bare local process (spawn + exit `true`)', ms(cpuPerCycle.get('bare')!), '-', '-', '-');
  for (const [backend, pool] of pools) {
    gc();
    const MiB = 1024 * 1024;
    const before = memory.get(backend)!;
    const heapGrowth = process.memoryUsage().heapUsed - before.heap;
    const rssGrowth = process.memoryUsage().rss - before.rss;
    await pool.close();
    const leaked = (await pool.existingSandboxes()).length;
    row(backend, ms(cpuPerCycle.get(backend)!), String(leaked), `${(heapGrowth / MiB).toFixed(1)} MiB`, `${(rssGrowth / MiB).toFixed(1)} MiB`);
    report.compare({ metric: `create + destroy cycles, ${backend} (${ms(cpuPerCycle.get(backend)!)} host CPU each, ${leaked} leaked)`, unit: 'cycles/s', ours: rates[backend]!, baseline: rates.bare!, baselineName: 'bare spawn + exit', higherIsBetter: true });
  }
}

async function main(): Promise<void> {
  await dockerComponent().ensure(log);
  await imagesComponent().ensure(log);
  // The bare baseline runs the image's own interpreter and test runner: Debian's python3 and python3-pytest.
  await ensureDebianProgram('pytest-3', 'python3-pytest', 'the bare-process pytest baseline', log);
  const image = imageFor('python-repair');
  process.stdout.write(`# sandbox benchmark: ${image}, backends ${BACKENDS.join(', ')}, ${SAMPLES} samples, ${CYCLES} cycles, ${RUNS} pytest runs per level\n`);
  if (SECTIONS.has('latency')) await firstCommandLatency(image);
  if (SECTIONS.has('pytest')) await pytestThroughput(image, PYTHON);
  if (SECTIONS.has('cycles')) await createDestroyRate(image);
  report.save();
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench:sandbox failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
