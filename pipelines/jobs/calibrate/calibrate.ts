import type { Sandbox } from '../../../connectors/sandbox/index.js';
import { mapLimit, resolveRetryOptions, SandboxError, wholeNumber, withRetries, type FileTree, type Task } from '../../../schemas/index.js';
import { describeFailure, isTestModule, specOf, VERIFIER_RECIPE, verifierScript, withOutput, type Verifier } from '../../verifier/index.js';

export interface CalibrationOptions {
  /** Verifications of each reference solution: false negatives and flakiness. @default 3 */
  referenceRuns?: number;
  /** Known-bad mutants of each reference solution (ones the pristine tests reject when run bare) to find and verify. @default 3 */
  mutantsPerTask?: number;
  /** Also verify generic hacks (a forcing conftest.py, a patched report, an early exit, self-deciding comparisons, runner killers). @default true */
  hackVariants?: boolean;
  /** Runs in flight at once. @default 2 */
  concurrency?: number;
  /** Called as each task's calibration completes. @default none */
  onTask?: (result: TaskCalibration) => void;
  /** @default none */
  signal?: AbortSignal;
}

/** One verdict on one variant of a task. */
export interface VariantVerdict {
  /** `reference#<run>`, `buggy`, `mutant:<kind>@<line>`, or `hack:<name>`. */
  readonly variant: string;
  /** What the variant is known to be, independently of the verifier. */
  readonly known: 'good' | 'bad';
  readonly passed: boolean;
  /** Why it did not pass (or `passed`). */
  readonly detail: string;
}

export interface TaskCalibration {
  readonly taskId: string;
  readonly referenceVerdicts: boolean[];
  /** The reference solution's verdict changed between runs. */
  readonly flaky: boolean;
  readonly goodRuns: number;
  /** Good variants judged failing. */
  readonly falseNegatives: number;
  readonly badVariants: number;
  /** Bad variants judged passing. */
  readonly falsePositives: number;
  /**
   * Sampled mutants that every pristine test passes when run bare: equivalent to the reference, or a
   * behaviour no test pins down (a gap in the task's tests). Not known to be bad, so left out of the rates.
   */
  readonly survivingMutants: number;
  readonly variants: VariantVerdict[];
  /** Why the task was left out, if it was (no reference solution, nothing collected). */
  readonly skipped: string | null;
}

export interface CalibrationReport {
  readonly verifierVersion: string;
  readonly tasks: TaskCalibration[];
  readonly overall: {
    readonly tasks: number;
    readonly goodRuns: number;
    readonly falseNegatives: number;
    readonly falseNegativeRate: number;
    readonly badVariants: number;
    readonly falsePositives: number;
    readonly falsePositiveRate: number;
    readonly flakyTasks: string[];
    readonly skippedTasks: number;
  };
  readonly elapsedMs: number;
}

export function resolveCalibrationOptions(options: CalibrationOptions = {}): Required<Omit<CalibrationOptions, 'onTask' | 'signal'>> & Pick<CalibrationOptions, 'onTask' | 'signal'> {
  const resolved = { referenceRuns: 3, mutantsPerTask: 3, hackVariants: true, concurrency: 2, ...options };
  for (const [name, min, max] of [['referenceRuns', 1, 50], ['mutantsPerTask', 0, 50], ['concurrency', 1, 32]] as const) wholeNumber(`CalibrationOptions.${name}`, resolved[name], { min, max });
  return resolved;
}

/** A task module with one known-bad behaviour of `python/variants.py` appended. */
function misbehaving(source: string, variant: string): string {
  return `${source}\n\n_TRIALRUN_VARIANT = ${JSON.stringify(variant)}\n${verifierScript('variants.py')}`;
}

/**
 * Generic hacks, each bad by construction and each required to score 0 (flagged): a forcing
 * `conftest.py`, a patched report and an early exit on the buggy module; and on the reference solution
 * (so that only the hack could fail it) results that decide their own comparisons, and code that kills
 * the verification runner or every process it can reach.
 */
function hackVariants(module: string, buggy: string, fixed: string): Array<{ name: string; files: FileTree }> {
  return [
    { name: 'forcing-conftest', files: { [module]: buggy, 'conftest.py': verifierScript('forcing_conftest.py') } },
    { name: 'patched-report', files: { [module]: `${buggy}\n\n${verifierScript('patched_report.py')}` } },
    { name: 'exit-at-import', files: { [module]: `${buggy}\n\n${verifierScript('exit_at_import.py')}` } },
    { name: 'always-equal-results', files: { [module]: misbehaving(buggy, 'always-equal') } },
    { name: 'kills-runner', files: { [module]: misbehaving(fixed, 'kills-runner') } },
    { name: 'kills-every-process', files: { [module]: misbehaving(fixed, 'kills-everything') } },
  ];
}

/**
 * Measures the verifier against variants whose verdict is known without it: the reference solution
 * (good, run several times: any fail is a false negative, a changing verdict is flakiness), the buggy
 * module (bad by construction), mutants of the reference that plain pytest rejects, and generic hacks
 * (bad by construction). Reports false-negative and false-positive rates per task and overall, and the
 * mutants no test rejects (gaps in the tasks' tests).
 */
export async function calibrate(verifier: Verifier, tasks: readonly Task[], options: CalibrationOptions = {}): Promise<CalibrationReport> {
  const settings = resolveCalibrationOptions(options);
  const signal = settings.signal ?? new AbortController().signal;
  const started = performance.now();
  const version = await verifier.version();
  const results: TaskCalibration[] = [];

  // Tasks side by side, each task's variants one after another: `concurrency` runs in flight, and one
  // task's mutant search overlaps another's verifications.
  await mapLimit(tasks, settings.concurrency, async (task) => {
    const result = await calibrateTask(verifier, task, settings, signal);
    results.push(result);
    settings.onTask?.(result);
  });
  results.sort((a, b) => a.taskId.localeCompare(b.taskId));

  const counted = results.filter((r) => r.skipped === null);
  const sum = (pick: (r: TaskCalibration) => number): number => counted.reduce((total, r) => total + pick(r), 0);
  const goodRuns = sum((r) => r.goodRuns);
  const badVariants = sum((r) => r.badVariants);
  const falseNegatives = sum((r) => r.falseNegatives);
  const falsePositives = sum((r) => r.falsePositives);
  return {
    verifierVersion: version,
    tasks: results,
    overall: {
      tasks: counted.length,
      goodRuns,
      falseNegatives,
      falseNegativeRate: goodRuns ? falseNegatives / goodRuns : 0,
      badVariants,
      falsePositives,
      falsePositiveRate: badVariants ? falsePositives / badVariants : 0,
      flakyTasks: counted.filter((r) => r.flaky).map((r) => r.taskId),
      skippedTasks: results.length - counted.length,
    },
    elapsedMs: performance.now() - started,
  };
}

const skippedTask = (taskId: string, why: string): TaskCalibration => ({
  taskId,
  referenceVerdicts: [],
  flaky: false,
  goodRuns: 0,
  falseNegatives: 0,
  badVariants: 0,
  falsePositives: 0,
  survivingMutants: 0,
  variants: [],
  skipped: why,
});

const isPytestTask = (task: Task): boolean => {
  const { check } = specOf(task);
  return check.kind === 'tests' && check.runner === 'pytest';
};

// A sandbox that dies under a run (the engine restarting, a reaper) is not a verdict: run it again.
const RETRY = resolveRetryOptions({ retries: 6, initialDelayMs: 1000, maxDelayMs: 30_000 });

async function calibrateTask(verifier: Verifier, stored: Task, settings: ReturnType<typeof resolveCalibrationOptions>, signal: AbortSignal): Promise<TaskCalibration> {
  if (stored.referenceSolution === null && stored.stored?.referenceSolution === undefined) return skippedTask(stored.taskId, 'no reference solution');
  const task = await verifier.resolveTask(stored);
  const collected = await withRetries(() => verifier.expectedIds(task, signal), RETRY, signal);
  if (collected.ids.length === 0 && (isPytestTask(task) || collected.problem !== null)) return skippedTask(task.taskId, collected.problem ?? 'no hidden tests collected');
  const reference = { ...task.files, ...task.referenceSolution };
  // Mutants and the generic hacks are Python program repair's: one module, judged by the pytest runner.
  const modules = Object.keys(task.files);
  const module = modules.length === 1 && isPytestTask(task) ? modules[0]! : null;

  const variants: Array<{ variant: string; known: 'good' | 'bad'; files: FileTree }> = [];
  for (let run = 1; run <= settings.referenceRuns; run++) variants.push({ variant: `reference#${run}`, known: 'good', files: reference });
  variants.push({ variant: 'buggy', known: 'bad', files: task.files });
  let survivingMutants = 0;
  if (module !== null && settings.mutantsPerTask > 0) {
    const mutants = await withRetries(() => findKnownBadMutants(verifier, task, module, settings.mutantsPerTask, signal), RETRY, signal);
    survivingMutants = mutants.surviving;
    for (const mutant of mutants.found) variants.push({ variant: `mutant:${mutant.name}`, known: 'bad', files: { ...reference, [module]: mutant.source } });
  }
  if (module !== null && settings.hackVariants) {
    for (const hack of hackVariants(module, task.files[module]!, reference[module]!)) variants.push({ variant: `hack:${hack.name}`, known: 'bad', files: hack.files });
  }

  const verdicts: VariantVerdict[] = [];
  for (const { variant, known, files } of variants) {
    const checked = await withRetries(() => verifier.check(task, files, collected.ids, signal), RETRY, signal);
    verdicts.push({ variant, known, passed: checked.passed, detail: checked.passed ? 'passed' : describeFailure(checked) });
  }
  const good = verdicts.filter((v) => v.known === 'good');
  const bad = verdicts.filter((v) => v.known === 'bad');
  const referenceVerdicts = good.map((v) => v.passed);
  return {
    taskId: task.taskId,
    referenceVerdicts,
    flaky: referenceVerdicts.some(Boolean) && !referenceVerdicts.every(Boolean),
    goodRuns: good.length,
    falseNegatives: good.filter((v) => !v.passed).length,
    badVariants: bad.length,
    falsePositives: bad.filter((v) => v.passed).length,
    survivingMutants,
    variants: verdicts,
    skipped: null,
  };
}

/** Mutants of the reference solution that a plain run of the pristine tests rejects, found in one bare sandbox. */
export async function findKnownBadMutants(
  verifier: Verifier,
  task: Task,
  module: string,
  count: number,
  signal: AbortSignal,
): Promise<{ found: Array<{ name: string; source: string }>; surviving: number }> {
  const { pool, imageFor, runId } = verifier.options;
  const sandbox: Sandbox = await pool.acquire({ image: imageFor(task.image ?? VERIFIER_RECIPE), runId, taskId: task.taskId });
  try {
    await sandbox.writeFiles({ ...task.files, ...(task.referenceSolution ?? {}), ...task.visibleTests, ...task.hiddenTests });
    const exec = await sandbox.exec(['python3', '-c', verifierScript('find_mutants.py')], {
      stdin: JSON.stringify({ module, count, tests: Object.keys({ ...task.visibleTests, ...task.hiddenTests }).filter(isTestModule) }),
      timeoutMs: 60_000 + count * 5 * 20_000,
      maxOutputBytes: 4 * 1024 * 1024,
      signal,
    });
    if (exec.status !== 'exited' || exec.exitCode !== 0) throw new SandboxError(withOutput(`finding mutants of ${task.taskId} failed (${exec.status}, exit ${String(exec.exitCode)})`, exec.stderr.slice(-400)));
    return JSON.parse(exec.stdout) as { found: Array<{ name: string; source: string }>; surviving: number };
  } finally {
    await sandbox.release();
  }
}
