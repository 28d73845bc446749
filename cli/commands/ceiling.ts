import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  appendLabel,
  checkLabellable,
  countLabels,
  EPISODE_MAX_TURNS,
  fitCeiling,
  labelCandidates,
  moduleSha256,
  oracleRate,
  readLabels,
  resolveCeilingFitOptions,
  uniformRates,
  type CeilingFit,
  type CurvePoint,
  type ExpectedRates,
  type LabelCounts,
  type Rates,
  type ResolvedCeilingFitOptions,
  type TaskLabel,
} from '../../pipelines/jobs/ceiling/index.js';
import { prepareTasks } from '../../pipelines/jobs/task-job/index.js';
import { ConfigError, nowIso, type Task } from '../../schemas/index.js';
import { imageFor, stackComponents, stackUp } from '../../stack/index.js';
import type { Command } from '../command.js';
import { intOption, numberOption, outputFile, requiredInt, stringOption, taskRowsFile, type OptionValues } from '../options.js';
import { bundledTasks, dataDir, rejectsLocation } from '../paths.js';
import { endProgress, printProgress, progressLine } from '../progress.js';
import { openSandboxPool } from '../sandbox-backend.js';
import { splitTasks } from './learn.js';

/** The stack labelling needs: process sandboxes take their root file systems from the engine's images. */
const SANDBOX_STACK = ['docker', 'sandbox-images'];

const FIT_DEFAULTS = resolveCeilingFitOptions();
const FLAG_OF_FIELD: Readonly<Record<string, string>> = { steps: '--steps', learningRate: '--learning-rate', hiddenSize: '--hidden', seed: '--seed' };

/** The command's settings, every one checked before the stack comes up. */
export function resolveCeilingSettings(values: OptionValues, data = dataDir()) {
  const labels = stringOption(values, 'labels');
  let fit: ResolvedCeilingFitOptions;
  try {
    fit = resolveCeilingFitOptions({
      steps: intOption(values, 'steps', 0),
      learningRate: values['learning-rate'] === undefined ? undefined : numberOption(values, 'learning-rate', { above: 0 }),
      hiddenSize: intOption(values, 'hidden'),
      seed: stringOption(values, 'seed'),
    });
  } catch (error) {
    // The flags the user typed, not the field names.
    if (error instanceof ConfigError) throw new ConfigError(error.message.replace(/CeilingFitOptions\.(\w+)/g, (field, name: string) => FLAG_OF_FIELD[name] ?? field));
    throw error;
  }
  return {
    taskFile: taskRowsFile(stringOption(values, 'tasks') ?? bundledTasks(), '--tasks'),
    // The default folder is made on the first label; a folder the user names must exist (a typo would show only later).
    labelsFile: labels === undefined ? join(data, 'ceiling', 'labels.jsonl') : outputFile(labels, '--labels'),
    evalPercent: numberOption(values, 'eval-percent', { above: 0, below: 100 }),
    concurrency: requiredInt(values, 'concurrency'),
    fit,
  };
}

/** What `ceiling` writes: the labels' counts, the reference rates and the fit, on learn's split of the tasks. */
export interface CeilingReport {
  readonly runId: string;
  readonly createdAt: string;
  readonly taskFile: string;
  readonly labelsFile: string;
  readonly evalPercent: number;
  readonly episodeMaxTurns: number;
  readonly counts: LabelCounts;
  readonly labelledNow: number;
  readonly train: SplitReport;
  readonly held: SplitReport;
  readonly fit: Omit<CeilingFit, 'params'>;
}

interface SplitReport {
  readonly taskIds: readonly string[];
  readonly uniform: ExpectedRates;
  readonly oracle: ReturnType<typeof oracleRate>;
}

export const ceilingCommand: Command = {
  name: 'ceiling',
  summary:
    "Measure the ceiling of the onnx-repair policy's features: label every candidate edit of each task's first choice\n" +
    '(visible tests, and the verifier when they pass; kept in a labels file, so only new or changed tasks are labelled),\n' +
    "then fit the policy's MLP to choose the solving edits on learn's training split and replay it greedily on both splits,\n" +
    'beside a uniformly random choice (the untrained policy) and an oracle (some edit solves).',
  usage: '',
  options: {
    tasks: { type: 'string' },
    labels: { type: 'string' },
    'eval-percent': { type: 'string', default: '25' },
    concurrency: { type: 'string', default: '2' },
    steps: { type: 'string' },
    'learning-rate': { type: 'string' },
    hidden: { type: 'string' },
    seed: { type: 'string' },
  },
  help: {
    tasks: 'JSON Lines task file of program-repair/v1 tasks, held-out rows marked split "eval" (default: the bundled tasks)',
    labels: `labels file (JSON Lines, one task a line; default: ${join(dataDir(), 'ceiling', 'labels.jsonl')})`,
    'eval-percent': "share of tasks held out when none is marked \"eval\" (learn's split for the same value)",
    concurrency: 'tasks labelled at once (each one process sandbox, and one more per verification)',
    steps: `full-batch Adam steps of the fit (default: ${FIT_DEFAULTS.steps})`,
    'learning-rate': `the fit's Adam step size (default: ${FIT_DEFAULTS.learningRate})`,
    hidden: `hidden units of the MLP (default: ${FIT_DEFAULTS.hiddenSize})`,
    seed: `seeds the initial parameters, the second choices trained on and greedy tie-breaks (default: ${FIT_DEFAULTS.seed})`,
  },
  async run(values) {
    const settings = resolveCeilingSettings(values);
    const runId = `ceiling-${randomUUID().slice(0, 8)}`;
    const data = dataDir();
    // The rejects location (TRIALRUN_REJECTS, maybe s3://) is checked by the task job before it reads a row.
    const prepared = await prepareTasks({ file: settings.taskFile, rejectsDir: rejectsLocation(), jobRunId: runId });
    checkLabellable(prepared.tasks);
    const { train, held } = splitTasks(prepared.tasks, settings.evalPercent / 100);
    if (train.length === 0 || held.length === 0) throw new ConfigError(`${settings.taskFile}: need both training and held-out tasks, got ${train.length} and ${held.length} (rejected rows: ${prepared.rejectsFile})`);
    // A bad labels file stops here, before anything starts.
    const labels = readLabels(settings.labelsFile);
    // Each module hashed once: the digests decide what to label, then which labels the fit takes.
    const digests = new Map(prepared.tasks.map((task) => [task.taskId, moduleSha256(task)]));
    const current = (task: Task): TaskLabel | undefined => {
      const label = labels.get(task.taskId);
      return label?.moduleSha256 === digests.get(task.taskId) ? label : undefined;
    };
    const missing = prepared.tasks.filter((task) => current(task) === undefined);
    process.stderr.write(`${runId}: ${prepared.tasks.length} tasks (${train.length} training, ${held.length} held out); ${prepared.tasks.length - missing.length} labelled in ${settings.labelsFile}, ${missing.length} to label\n`);

    const interrupt = new AbortController();
    const stop = (): void => interrupt.abort();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    try {
      if (missing.length > 0) {
        await stackUp((line) => void process.stderr.write(`${line}\n`), stackComponents().filter((component) => SANDBOX_STACK.includes(component.name)));
        const pool = openSandboxPool('process');
        const started = performance.now();
        try {
          await labelCandidates(missing, {
            pool,
            imageFor,
            runId,
            concurrency: settings.concurrency,
            signal: interrupt.signal,
            onLabel: (label) => {
              appendLabel(settings.labelsFile, label);
              labels.set(label.taskId, label);
            },
            onProgress: (done, total, label) => printProgress(progressLine('[label]', done, total, performance.now() - started, `${label.taskId}: ${describeLabel(label)}`)),
          });
          endProgress();
        } finally {
          await pool.close();
        }
      }
      const labelsOf = (tasks: readonly Task[]): TaskLabel[] => tasks.map((task) => current(task)!);
      const [trainLabels, heldLabels] = [labelsOf(train), labelsOf(held)];
      const fit = await fitCeiling(trainLabels, heldLabels, {
        ...settings.fit,
        signal: interrupt.signal,
        onReport: (point) => process.stderr.write(`[fit] ${formatPoint(point)}\n`),
      });
      const { params: _params, ...fitReport } = fit;
      const split = (tasks: readonly Task[], splitLabels: readonly TaskLabel[]): SplitReport => ({ taskIds: tasks.map((task) => task.taskId), uniform: uniformRates(splitLabels), oracle: oracleRate(splitLabels) });
      const report: CeilingReport = {
        runId,
        createdAt: nowIso(),
        taskFile: settings.taskFile,
        labelsFile: settings.labelsFile,
        evalPercent: settings.evalPercent,
        episodeMaxTurns: EPISODE_MAX_TURNS,
        counts: countLabels([...trainLabels, ...heldLabels]),
        labelledNow: missing.length,
        train: split(train, trainLabels),
        held: split(held, heldLabels),
        fit: fitReport,
      };
      const out = join(data, 'ceiling');
      mkdirSync(out, { recursive: true });
      const file = join(out, `${runId}.json`);
      writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
      process.stdout.write(`${formatCeiling(report, file)}\n`);
      return 0;
    } catch (error) {
      if (!interrupt.signal.aborted) throw error;
      endProgress();
      process.stderr.write(`${runId} interrupted; the labels finished so far are kept in ${settings.labelsFile}, and the next run goes on from them\n`);
      return 130;
    } finally {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    }
  },
};

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
const interval = (i: { low: number; high: number }): string => `[${pct(i.low)}, ${pct(i.high)}]`;

function describeLabel(label: TaskLabel): string {
  if (label.noChoice !== null) return `no choice (${label.noChoice.reason})`;
  const counts = countLabels([label]);
  return `${counts.candidates} edits, ${counts.visiblePasses} pass the visible tests, ${counts.solves} solve`;
}

const greedy = (rates: Rates): string => rates.within.map((b) => `within ${b.turns}: ${pct(b.rate)} ${interval(b.interval)} (${b.successes}/${rates.tasks})`).join('  ');
const expected = (rates: ExpectedRates): string => rates.within.map((b) => `within ${b.turns}: ${pct(b.rate)}`).join('  ');

function formatPoint(point: CurvePoint): string {
  const likelihood = point.trainLogLikelihood === null ? '-' : point.trainLogLikelihood.toFixed(3);
  const rates = (rates: Rates): string => rates.within.map((b) => `${String(b.turns).padStart(2)}: ${pct(b.rate).padStart(6)}`).join(' ');
  return `step ${String(point.step).padStart(6)}  log-likelihood ${likelihood.padStart(7)}  train ${rates(point.train)}  held-out ${rates(point.held)}`;
}

export function formatCeiling(report: CeilingReport, file: string): string {
  const c = report.counts;
  const o = report.fit.options;
  const oracle = (s: SplitReport): string => `${pct(s.oracle.rate)} (${s.oracle.solvable} of ${s.oracle.tasks})`;
  return [
    `${report.runId}: ${c.tasks} tasks (${report.train.taskIds.length} training, ${report.held.taskIds.length} held out at ${report.evalPercent}%), ${report.labelledNow} labelled now; labels ${report.labelsFile}`,
    `labels    ${c.candidates} candidate edits, ${c.visiblePasses} pass the visible tests, ${c.solves} solve (the verifier's hidden tests); ${c.withoutChoice} tasks without a choice`,
    `episodes  of ${report.episodeMaxTurns} tool calls, replayed over the labels; success counted within each budget as learn's held-out evaluation counts it`,
    `uniform   held-out ${expected(report.held.uniform)}  train ${expected(report.train.uniform)}  (exact expectation of a uniformly random choice: the untrained policy)`,
    `oracle    held-out ${oracle(report.held)}  train ${oracle(report.train)}  (some edit solves: a policy told every verdict, at its first try)`,
    `fit       ${o.steps} full-batch Adam steps at ${o.learningRate}, ${o.hiddenSize} hidden units, seed ${o.seed}: ${report.fit.decisions} training decisions (${o.secondChoicesPerTask} second choices per task at most), ${report.fit.learnableDecisions} with a solving edit, ${report.fit.samples} samples a step`,
    ...report.fit.curve.map((point) => `  ${formatPoint(point)}`),
    `ceiling   held-out ${greedy(report.fit.final.held)}`,
    `          train    ${greedy(report.fit.final.train)}`,
    `          (the fitted policy, greedy; 95% Wilson intervals over tasks)`,
    `report    ${file}`,
  ].join('\n');
}
