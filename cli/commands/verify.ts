import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parsePosition, readTopic } from '../../connectors/kafka/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { loadJobFile, rowsFileJob, runTaskJob } from '../../pipelines/task-job/index.js';
import { GlobalTable } from '../../pipelines/runtime/index.js';
import { calibrate, rescore, Verifier, type CalibrationReport, type TaskLookup } from '../../pipelines/verifier/index.js';
import { ConfigError, NotFoundError, ShutdownError, type Task } from '../../schemas/index.js';
import { imageFor } from '../../stack/index.js';
import { intOption, type Command } from '../command.js';
import { processorContext } from '../context.js';
import { dataDir } from '../paths.js';

const JOB_FILE = /\.(ya?ml|json)$/i;
const ACTIONS = ['version', 'calibrate', 'rescore'] as const;

const percent = (rate: number): string => `${(rate * 100).toFixed(1)}%`;

function formatCalibration(report: CalibrationReport): string {
  const rows = report.tasks.map((t) =>
    t.skipped !== null
      ? `${t.taskId.padEnd(40)} skipped: ${t.skipped}`
      : `${t.taskId.padEnd(40)} reference ${t.referenceVerdicts.map((v) => (v ? 'P' : 'F')).join('')}${t.flaky ? ' FLAKY' : ''}  FN ${t.falseNegatives}/${t.goodRuns}  FP ${t.falsePositives}/${t.badVariants}  surviving mutants ${t.survivingMutants}`,
  );
  const misjudged = report.tasks.flatMap((t) => t.variants.filter((v) => v.passed !== (v.known === 'good')).map((v) => `  ${t.taskId} ${v.variant} (${v.known}) judged ${v.passed ? 'passing' : 'failing'}: ${v.detail}`));
  const o = report.overall;
  return [
    `verifier ${report.verifierVersion}`,
    ...rows,
    ...(misjudged.length ? ['misjudged:', ...misjudged] : []),
    `tasks ${o.tasks} (skipped ${o.skippedTasks})  false negatives ${o.falseNegatives}/${o.goodRuns} = ${percent(o.falseNegativeRate)}  false positives ${o.falsePositives}/${o.badVariants} = ${percent(o.falsePositiveRate)}  flaky ${o.flakyTasks.length ? o.flakyTasks.join(', ') : 'none'}  in ${(report.elapsedMs / 1000).toFixed(0)} s`,
  ].join('\n');
}

/** Tasks from a job file or rows file (the task job, dry run), else every task on the tasks topic. */
async function loadTasks(file: string | undefined, pool: DockerSandboxPool): Promise<Task[]> {
  if (file !== undefined) {
    const job = JOB_FILE.test(file) ? loadJobFile(file) : rowsFileJob(file);
    const report = await runTaskJob({ job, rejectsDir: join(dataDir(), 'rejects'), dryRun: true, pool, imageFor, onProgress: (line) => void process.stderr.write(`[tasks] ${line}\n`) });
    return [...report.tasks];
  }
  const context = processorContext();
  const tasks = new Map<string, Task>();
  await readTopic(context.kafka, {
    topic: context.names.name('tasks'),
    onRecord: async ({ key, value }) => {
      if (key === null) return;
      if (value === null) tasks.delete(key);
      else tasks.set(key, await context.serde.decode('tasks', value));
    },
  });
  return [...tasks.values()];
}

export const verifyCommand: Command = {
  name: 'verify',
  summary:
    'The verifier: its version, its calibration, and re-scoring.\n' +
    '  version                     print this build\'s verifier version (a hash of its code, sandbox image and options)\n' +
    '  calibrate [job.yaml|rows]   verify every task\'s reference solution (several runs: false negatives, flakiness)\n' +
    '                              and known-bad variants (the buggy module, mutants plain pytest rejects, generic\n' +
    '                              hacks: false positives); tasks from a job or rows file, else the tasks topic\n' +
    '  rescore --from <pos> --verifier <version>\n' +
    '                              re-verify stored trajectories from a position (offset, ISO time, @epoch-ms, earliest)\n' +
    '                              and write new verifications and rewards under this verifier version; old ones stay',
  usage: '<version | calibrate [file] | rescore>',
  options: {
    from: { type: 'string' },
    to: { type: 'string', default: 'latest' },
    verifier: { type: 'string' },
    'timeout-ms': { type: 'string', default: '20000' },
    'reference-runs': { type: 'string', default: '3' },
    mutants: { type: 'string', default: '3' },
    'skip-hacks': { type: 'boolean', default: false },
    concurrency: { type: 'string', default: '2' },
    limit: { type: 'string' },
    'min-group-size': { type: 'string', default: '2' },
    json: { type: 'string' },
  },
  help: {
    from: 'rescore: first trajectory position (offset on every partition, ISO time, @epoch-ms, earliest, latest)',
    to: 'rescore: position to stop before',
    verifier: 'rescore: the verifier version to write under; must be this build\'s (see `verify version`)',
    'timeout-ms': 'budget of one test run (part of the verifier version)',
    'reference-runs': 'reference-solution runs per task (part of the verifier version)',
    mutants: 'calibrate: known-bad mutants per task',
    'skip-hacks': 'calibrate: leave out the generic hack variants',
    concurrency: 'calibrate: runs in flight',
    limit: 'calibrate: only the first N tasks',
    'min-group-size': 'rescore: fewest members a partly re-scored group needs to be rewarded',
    json: 'write the full report as JSON to this file',
  },
  async run(values, [action, file]) {
    if (!ACTIONS.includes(action as (typeof ACTIONS)[number])) {
      process.stderr.write(`trialrun verify: one of ${ACTIONS.join(', ')} (see --help)\n`);
      return 2;
    }
    const pool = new DockerSandboxPool();
    const closers: Array<() => Promise<void>> = [() => pool.close()];
    // Ctrl-C stops the work in flight; the sandboxes are still released on the way out.
    const interrupt = new AbortController();
    const stop = (): void => interrupt.abort(new ShutdownError());
    process.once('SIGINT', stop).once('SIGTERM', stop);
    try {
      const options = { timeoutMs: intOption(values, 'timeout-ms'), referenceRuns: Number(values['reference-runs']) };
      if (!Number.isInteger(options.referenceRuns) || options.referenceRuns < 0) throw new ConfigError(`--reference-runs must be a whole number >= 0, got "${String(values['reference-runs'])}"`);
      const runId = `verify-${action}-${randomUUID().slice(0, 8)}`;

      if (action === 'version') {
        const verifier = new Verifier({ ...options, runId, pool, imageFor, tasks: { get: (id) => { throw new NotFoundError(`no task ${id}`); } } });
        process.stdout.write(`${await verifier.version()}\n`);
        return 0;
      }

      if (action === 'calibrate') {
        const all = await loadTasks(file, pool);
        const limit = intOption(values, 'limit');
        const tasks = limit === undefined ? all : all.slice(0, limit);
        if (tasks.length === 0) throw new ConfigError(file ? `${file} gave no tasks` : 'the tasks topic is empty: publish tasks first, or name a job or rows file');
        const byId = new Map(tasks.map((t) => [t.taskId, t]));
        const lookup: TaskLookup = { get: (id) => byId.get(id) ?? (() => { throw new NotFoundError(`no task ${id}`); })() };
        const verifier = new Verifier({ ...options, runId, pool, imageFor, tasks: lookup });
        process.stderr.write(`[verify] calibrating ${tasks.length} tasks with verifier ${await verifier.version()}\n`);
        let done = 0;
        const report = await calibrate(verifier, tasks, {
          referenceRuns: Math.max(1, options.referenceRuns),
          mutantsPerTask: Number(values.mutants),
          hackVariants: !values['skip-hacks'],
          concurrency: intOption(values, 'concurrency'),
          signal: interrupt.signal,
          onTask: (t) => void process.stderr.write(`[verify] ${++done}/${tasks.length} ${t.taskId}: FN ${t.falseNegatives}/${t.goodRuns} FP ${t.falsePositives}/${t.badVariants}${t.skipped ? ` (skipped: ${t.skipped})` : ''}\n`),
        });
        if (typeof values.json === 'string') writeFileSync(values.json, `${JSON.stringify(report, null, 2)}\n`);
        process.stdout.write(`${formatCalibration(report)}\n`);
        return 0;
      }

      if (typeof values.from !== 'string' || typeof values.verifier !== 'string') throw new ConfigError('rescore needs --from <position> and --verifier <version>');
      const context = processorContext();
      const tasks = await GlobalTable.load(context.kafka, context.serde, context.names, 'tasks');
      closers.push(() => tasks.close());
      const verifier = new Verifier({ ...options, runId, pool, imageFor, tasks });
      const report = await rescore(context, verifier, {
        from: parsePosition(values.from),
        to: parsePosition(String(values.to)),
        expectVersion: values.verifier,
        scoring: { minGroupSize: intOption(values, 'min-group-size') },
        signal: interrupt.signal,
        onProgress: (p) => void process.stderr.write(`\r[verify] re-scored ${p.verified} of ${p.total} (skipped ${p.skipped})`),
      });
      process.stderr.write('\n');
      if (typeof values.json === 'string') writeFileSync(values.json, `${JSON.stringify(report, null, 2)}\n`);
      process.stdout.write(
        [
          `rescore        ${report.rescoreId}`,
          `verifier       ${report.verifierVersion}`,
          `trajectories   ${report.trajectoriesRead} read, ${report.verificationsWritten} re-verified, ${report.skipped.length} skipped`,
          ...report.skipped.slice(0, 10).map((s) => `  skipped ${s.partition}@${s.offset}: ${s.reason}`),
          `rewards        ${report.rewardsWritten} written, ${report.rewardsAlreadyWritten} already there`,
          `dispositions   ${Object.entries(report.dispositions).map(([k, n]) => `${k} ${n}`).join(', ')}`,
          `compare        trialrun sql "SELECT verifier_version, count(*), avg(reward) FROM rewards GROUP BY 1"`,
        ].join('\n') + '\n',
      );
      return 0;
    } finally {
      process.off('SIGINT', stop).off('SIGTERM', stop);
      for (const close of closers.reverse()) await close();
    }
  },
};
