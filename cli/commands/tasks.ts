import { dirname } from 'node:path';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { prepareTopics } from '../../pipelines/runtime/index.js';
import { formatReport, isWorkspaceJob, loadJobFile, readStructuredFile, resolveWorkspaceJob, rowsFileJob, runTaskJob, type TaskJobReport } from '../../pipelines/jobs/task-job/index.js';
import { imageFor } from '../../stack/index.js';
import { ConfigError } from '../../schemas/index.js';
import type { Command } from '../command.js';
import { processorContext } from '../context.js';
import { existingFile, JOB_FILE, stringOption } from '../options.js';
import { checkStorageLocations, dataDir, rejectsLocation, treeStore } from '../paths.js';
import { runWorkspaceJobWithStack } from '../workspace-tasks.js';

/** The report without the task records themselves, for --json. */
function reportJson(report: TaskJobReport): string {
  const { tasks, rows, ...rest } = report;
  return JSON.stringify({ ...rest, tasks: tasks.length }, null, 2);
}

export const tasksCommand: Command = {
  name: 'tasks',
  summary:
    'Task data jobs.\n' +
    '  publish <job.yaml>    run a job file (see tasks/jobs/): read the sources (JSON Lines, JSON, CSV, Parquet, globs),\n' +
    '                        map and validate rows (rejects go to a rejects file with source, row and reason), drop\n' +
    '                        exact and near duplicates and eval contamination, derive validated repair tasks from\n' +
    '                        solutions, place tasks in difficulty buckets from observed pass rates, and publish the\n' +
    '                        batch to the tasks topic in one transaction (tasks already published are not sent again)\n' +
    '  publish <rows.jsonl>  the same over a file of bundled-format repair rows, with default settings\n' +
    '  A job file with `env: workspace/v1` publishes workspace tasks instead (tasks/workspace-mini/job.yaml): trees from\n' +
    '  folders, tarballs or git commits, a verification spec per task, trees above storeTreesAboveBytes kept in the\n' +
    '  artifact store ($TRIALRUN_ARTIFACTS, else artifacts/ under the state folder)',
  usage: 'publish <job.yaml | rows.jsonl>',
  options: {
    'dry-run': { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    analytics: { type: 'string' },
    out: { type: 'string' },
  },
  help: {
    'dry-run': 'run every stage and report what each did, publish nothing (needs no Kafka)',
    json: 'print the report as JSON',
    analytics: 'analytics store whose rewards give observed pass rates (default: the data folder)',
    out: 'also write the selected tasks as a JSON Lines rows file (with family, split and priority), which `run`, `learn` and\n' +
      '`verify calibrate` read without deriving again: a path, or s3://bucket/key (put there when the job ends). Rejects go to\n' +
      '$TRIALRUN_REJECTS (a folder or s3://bucket/prefix), else rejects/ under the data folder',
  },
  async run(values, [action, file, ...extra]) {
    if (action !== 'publish' || !file || extra.length > 0) throw new ConfigError('usage: trialrun tasks publish <job.yaml | rows.jsonl> [--dry-run] [--json]');
    const path = existingFile(file, 'the job or rows file');
    const dryRun = Boolean(values['dry-run']);
    const out = stringOption(values, 'out');
    const raw = JOB_FILE.test(path) ? readStructuredFile(path, 'job file') : null;
    if (isWorkspaceJob(raw)) {
      if (out) throw new ConfigError('--out writes repair rows; a workspace job (env: workspace/v1) has none');
      const job = resolveWorkspaceJob(raw, dirname(path), `job file ${path}`);
      await checkStorageLocations();
      const context = dryRun ? undefined : await processorContext();
      if (context) await prepareTopics(context);
      const report = await runWorkspaceJobWithStack({ job, rejectsDir: rejectsLocation(), trees: treeStore(), dryRun, context, onProgress: (line) => void process.stderr.write(`[tasks] ${line}\n`) });
      process.stdout.write(`${values.json ? reportJson(report) : formatReport(report)}\n`);
      return 0;
    }
    const job = JOB_FILE.test(path) ? loadJobFile(path) : rowsFileJob(path);
    await checkStorageLocations();
    const analyticsDir = stringOption(values, 'analytics') ?? dataDir();
    const context = dryRun ? undefined : await processorContext();
    if (context) await prepareTopics(context);
    const pool = job.spec.derive ? new DockerSandboxPool() : undefined;
    try {
      const report = await runTaskJob({
        job,
        rejectsDir: rejectsLocation(),
        rowsFile: out,
        analyticsDir,
        dryRun,
        context,
        pool,
        imageFor,
        onProgress: (line) => void process.stderr.write(`[tasks] ${line}\n`),
      });
      if (out) process.stderr.write(`[tasks] wrote ${report.taskCount} task row(s) to ${out}\n`);
      process.stdout.write(`${values.json ? reportJson(report) : formatReport(report)}\n`);
      return 0;
    } finally {
      await pool?.close();
    }
  },
};
