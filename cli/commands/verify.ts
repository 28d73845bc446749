import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { checkRange, readTopic } from '../../connectors/kafka/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { loadJobFile, rowsFileJob, runTaskJob } from '../../pipelines/jobs/task-job/index.js';
import { GlobalTable } from '../../pipelines/runtime/index.js';
import { calibrate, type CalibrationReport } from '../../pipelines/jobs/calibrate/index.js';
import { rescore } from '../../pipelines/jobs/rescore/index.js';
import { Verifier, type TaskLookup } from '../../pipelines/verifier/index.js';
import { ConfigError, NotFoundError, ShutdownError, type Task } from '../../schemas/index.js';
import { imageFor } from '../../stack/index.js';
import type { Command } from '../command.js';
import { processorContext } from '../context.js';
import { existingFile, intOption, JOB_FILE, outputFile, positionOption, requiredInt, stringOption } from '../options.js';
import { rejectsLocation, treeStore } from '../paths.js';
import { isWorkspaceJobFile, workspaceJobTasks } from '../workspace-tasks.js';
import { endProgress, printProgress, progressLine } from '../progress.js';

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
    if (isWorkspaceJobFile(file)) return [...(await workspaceJobTasks(file, rejectsLocation(), 'job file', pool))];
    const job = JOB_FILE.test(file) ? loadJobFile(file) : rowsFileJob(file);
    const report = await runTaskJob({ job, rejectsDir: rejectsLocation(), dryRun: true, pool, imageFor, onProgress: (line) => void process.stderr.write(`[tasks] ${line}\n`) });
    return [...report.tasks];
  }
  const context = await processorContext(['tasks']);
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
    '                              and known-bad variants (the starting files; for pytest program repair also mutants\n' +
    '                              plain pytest rejects and generic hacks: false positives), whatever the task\'s\n' +
    '                              verification kind; tasks from a job or rows file, else the tasks topic\n' +
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
  async run(values, [action, file, ...extra]) {
    if (!ACTIONS.includes(action as (typeof ACTIONS)[number]) || extra.length > 0 || (file !== undefined && action !== 'calibrate')) {
      throw new ConfigError(`expected ${ACTIONS.join(', ')} (calibrate may name one file), got "${[action, file, ...extra].filter(Boolean).join(' ')}" (see trialrun verify --help)`);
    }
    // Every option is checked before a sandbox pool or a connection exists.
    // Claim-checked trees (large task trees, final workspaces) are read from the checkout's artifact store.
    const options = { timeoutMs: requiredInt(values, 'timeout-ms'), referenceRuns: requiredInt(values, 'reference-runs', 0), trees: treeStore() };
    const jsonOption = stringOption(values, 'json');
    const json = jsonOption === undefined ? undefined : outputFile(jsonOption, '--json');
    const taskFile = file === undefined ? undefined : existingFile(file, 'the job or rows file');
    const calibration = { limit: intOption(values, 'limit'), mutants: requiredInt(values, 'mutants', 0), concurrency: requiredInt(values, 'concurrency') };
    const rescoring =
      action === 'rescore'
        ? { from: positionOption(values, 'from'), to: positionOption(values, 'to', 'latest'), expectVersion: stringOption(values, 'verifier'), minGroupSize: requiredInt(values, 'min-group-size') }
        : undefined;
    if (rescoring) {
      if (!rescoring.expectVersion) throw new ConfigError('rescore needs --verifier <version> (see trialrun verify version)');
      checkRange(rescoring.from, rescoring.to);
    }
    const pool = new DockerSandboxPool();
    const closers: Array<() => Promise<void>> = [() => pool.close()];
    // Ctrl-C stops the work in flight; the sandboxes are still released on the way out.
    const interrupt = new AbortController();
    const stop = (): void => interrupt.abort(new ShutdownError());
    process.once('SIGINT', stop).once('SIGTERM', stop);
    try {
      const runId = `verify-${action}-${randomUUID().slice(0, 8)}`;

      if (action === 'version') {
        const verifier = new Verifier({ ...options, runId, pool, imageFor, tasks: { get: (id) => { throw new NotFoundError(`no task ${id}`); } } });
        process.stdout.write(`${await verifier.version()}\n`);
        return 0;
      }

      if (action === 'calibrate') {
        const all = await loadTasks(taskFile, pool);
        const { limit } = calibration;
        const tasks = limit === undefined ? all : all.slice(0, limit);
        if (tasks.length === 0) throw new ConfigError(file ? `${file} gave no tasks` : 'the tasks topic is empty: publish tasks first, or name a job or rows file');
        const byId = new Map(tasks.map((t) => [t.taskId, t]));
        const lookup: TaskLookup = { get: (id) => byId.get(id) ?? (() => { throw new NotFoundError(`no task ${id}`); })() };
        const verifier = new Verifier({ ...options, runId, pool, imageFor, tasks: lookup });
        process.stderr.write(`[verify] calibrating ${tasks.length} tasks with verifier ${await verifier.version()}\n`);
        let done = 0;
        const report = await calibrate(verifier, tasks, {
          referenceRuns: Math.max(1, options.referenceRuns),
          mutantsPerTask: calibration.mutants,
          hackVariants: !values['skip-hacks'],
          concurrency: calibration.concurrency,
          signal: interrupt.signal,
          onTask: (t) => void process.stderr.write(`[verify] ${++done}/${tasks.length} ${t.taskId}: FN ${t.falseNegatives}/${t.goodRuns} FP ${t.falsePositives}/${t.badVariants}${t.skipped ? ` (skipped: ${t.skipped})` : ''}\n`),
        });
        if (json) writeFileSync(json, `${JSON.stringify(report, null, 2)}\n`);
        process.stdout.write(`${formatCalibration(report)}\n`);
        return 0;
      }

      const context = await processorContext(['tasks', 'trajectories', 'verifications', 'rewards']);
      const started = performance.now();
      const tasks = await GlobalTable.load(context.kafka, context.serde, context.names, 'tasks');
      closers.push(() => tasks.close());
      const verifier = new Verifier({ ...options, runId, pool, imageFor, tasks });
      const report = await rescore(context, verifier, {
        from: rescoring!.from,
        to: rescoring!.to,
        expectVersion: rescoring!.expectVersion,
        scoring: { minGroupSize: rescoring!.minGroupSize },
        signal: interrupt.signal,
        onProgress: (p) => printProgress(progressLine('[verify] re-scored', p.read, p.total, performance.now() - started, `${p.verified} re-verified, ${p.skipped} skipped`)),
      });
      endProgress();
      if (json) writeFileSync(json, `${JSON.stringify(report, null, 2)}\n`);
      process.stdout.write(
        [
          `rescore        ${report.rescoreId}`,
          `verifier       ${report.verifierVersion}`,
          `trajectories   ${report.trajectoriesRead} read, ${report.verificationsWritten} re-verified, ${report.skipped.length} skipped`,
          ...report.skipped.slice(0, 10).map((s) => `  skipped ${s.partition}@${s.offset}: ${s.reason}`),
          `rewards        ${report.rewardsWritten} written, ${report.rewardsAlreadyWritten} already there`,
          `dispositions   ${Object.entries(report.dispositions).map(([k, n]) => `${k} ${n}`).join(', ')}`,
          // The re-scored records are on the topics now; DuckDB reads what the sink has landed.
          `analytics      the new verifications and rewards reach DuckDB once the analytics sink lands them (it runs in \`trialrun demo\`, or: trialrun run analytics-sink)`,
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
