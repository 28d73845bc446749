import { createHash, randomBytes } from 'node:crypto';
import { resolveStoredTrees, treeBytes, type TreeStore } from '../../connectors/artifacts/index.js';
import { limitsForWorkspace, type ExecResult, type Sandbox, type SandboxPool } from '../../connectors/sandbox/index.js';
import {
  ConfigError,
  errorMessage,
  NO_WORKSPACE_EXTRAS,
  nowIso,
  PYTEST_REPAIR_VERIFICATION,
  SandboxError,
  wholeNumber,
  type FileTree,
  type HackFlag,
  type Quarantine,
  type Step,
  type Task,
  type Trajectory,
  type Verification,
  type VerificationSpec,
  type WorkspaceExtras,
} from '../../schemas/index.js';
import { allAnswer, SANDBOX_RETRY, storeAnswers, StreamProcessor, type Accept, type MembershipOptions, type ProcessorContext } from '../runtime/index.js';
import { isTestModule, plantCanaries } from './canary.js';
import { gradedIds, hostOnlyFiles, judgeGraded, runGradedCheck, type GradedCheck, type GradeRun } from './grading.js';
import { describeCollectError, judge, RunnerResult, summariseFlags, withOutput, type Judgement, type RunnerFailure } from './judge.js';
import { verifierScript } from './sandbox-scripts.js';
import { resolveRewardSpec, scoreOf } from './score.js';
import { screenFinalFiles, screenSteps, taskTestFiles, treeTestModules, type Screened, type Unwritten } from './screening.js';
import { verifierVersion } from './version.js';

/** Where tasks are looked up by id; a `GlobalTable<'tasks'>` or a plain map for batch jobs. */
export interface TaskLookup {
  get(taskId: string): Task;
}

export interface VerifierOptions {
  runId: string;
  pool: SandboxPool;
  imageFor: (recipe: string) => string;
  tasks: TaskLookup;
  /** Processor instance id (the verifier processor only). @default '0' */
  instanceId?: string;
  /** Wall-clock budget of one test run inside the sandbox, in ms. @default 20000 */
  timeoutMs?: number;
  /**
   * Runs of each task's reference solution before the task's verifications count. A task whose
   * verdict changes between runs is quarantined as flaky, one whose reference fails as broken; 0 skips
   * the check (no quarantine is ever decided). @default 3
   */
  referenceRuns?: number;
  /**
   * Where trees kept as claim checks are read from: a task's `stored` trees and a trajectory's `finalFilesRef`.
   * @default null (a task or trajectory that needs the store is refused with a ConfigError naming it)
   */
  trees?: TreeStore | null;
}

export interface ResolvedVerifierOptions extends Required<VerifierOptions> {}

/** The sandbox recipe a verification runs in when its task names none (`Task.image`). */
export const VERIFIER_RECIPE = 'python-repair';

/** The in-sandbox executor (sandbox-images/python-repair/agent/agent.py), whose process-tree kill the runner uses. */
const EXECUTOR_MODULE = '/opt/trialrun-agent/agent.py';

/** How a task is verified: its own spec, or program repair's pytest run. */
export const specOf = (task: Task): VerificationSpec => task.verification ?? PYTEST_REPAIR_VERIFICATION;

/** The hardened pytest runner (witness, canaries, strict assertions) decides the task. */
const isPytest = (spec: VerificationSpec): boolean => spec.check.kind === 'tests' && spec.check.runner === 'pytest';

/** What a spec lacks to be run (the schema leaves a command runner's `command` and `junitPath` optional), or null. */
function specProblem(spec: VerificationSpec): string | null {
  const { check } = spec;
  if (check.kind !== 'tests' || check.runner !== 'command') return null;
  const absent = [check.command === undefined ? '`command`' : null, check.junitPath === undefined ? '`junitPath`' : null].filter(Boolean);
  return absent.length ? `its tests check with runner 'command' has no ${absent.join(' and no ')}` : null;
}

/** Tree-store lookups kept resolved (a 50 MB repository is read once, not once per trajectory). */
const RESOLVED_TASKS_KEPT = 16;

export function resolveVerifierOptions(options: VerifierOptions): ResolvedVerifierOptions {
  const resolved = { instanceId: '0', timeoutMs: 20_000, referenceRuns: 3, trees: null, ...options };
  wholeNumber('VerifierOptions.timeoutMs', resolved.timeoutMs, { min: 1000, max: 600_000, unit: 'ms' });
  wholeNumber('VerifierOptions.referenceRuns', resolved.referenceRuns, { min: 0, max: 50 });
  if (!resolved.runId) throw new ConfigError('VerifierOptions.runId must not be empty');
  return resolved;
}

/** A task's hidden test ids and whether its verdicts can be trusted, settled once per task revision. */
export interface TaskAdmission {
  readonly expected: readonly string[];
  readonly quarantine: Quarantine | null;
}

/** One run's verdict with what it ran against. */
export interface Checked extends Judgement {
  /** Set when the runner gave no readable result (see `RunnerFailure`). */
  readonly runnerFailure: RunnerFailure | null;
  /** The ids judged: the expected tests, one per output check, or the script's reward. */
  readonly testsTotal: number;
  /** The share of the judged ids that passed, or a script's own reward. */
  readonly fraction: number;
  /** The reward under the task's RewardSpec, in [0, 1]; 0 on any hack. */
  readonly score: number;
  readonly checkKind: VerificationSpec['check']['kind'];
  readonly verifierVersion: string;
  readonly imageDigest: string;
  readonly durationMs: number;
  /** What of the agent's final tree was too much to write (see Screened.unwritten). */
  readonly unwritten: Unwritten | null;
}

/** The pristine test modules pytest runs: visible and hidden, so a solution that breaks a visible test cannot score. */
const testModules = (tests: FileTree): string[] => Object.keys(tests).filter(isTestModule).sort();

/** A task revision's identity: the tasks topic is compacted, and a changed task must be admitted anew. */
function revisionOf(task: Task): string {
  const body = JSON.stringify([task.taskId, task.files, task.visibleTests, task.hiddenTests, task.referenceSolution, task.verification ?? null, task.image ?? null]);
  return `${task.taskId}@${createHash('sha256').update(body).digest('hex').slice(0, 16)}`;
}

const verdictList = (verdicts: readonly boolean[]): string => verdicts.map((v) => (v ? 'pass' : 'fail')).join(', ');

/**
 * Scores a trajectory by the task's verification spec (`Task.verification`; program repair's pytest run when it
 * has none), in a fresh grading sandbox that the agent never touched: the agent's final files are screened
 * (conftest.py, plugins, start-up hooks, runner configs, edited tests never reach the sandbox) and written first,
 * then the task's pristine visible tests and hidden files (which never enter an agent's sandbox), then the check
 * runs. `tests` with the pytest runner: a trusted runner inspects the agent's Python without importing it, runs
 * pytest with a witness plugin and canary tests, and kills whatever the run leaves behind; the verdict comes from
 * pytest's JUnit report checked against the witness and against the test ids expected of the pristine task (the
 * spec's FAIL_TO_PASS and PASS_TO_PASS lists, else every collected test, visible and hidden: calibration found
 * hidden suites that miss behaviour the visible tests pin down). `tests` with a command, `script` and `output`
 * run their command as one sandbox exec and are judged on the host from what it produced (grading.ts). A
 * missing, skipped or erroring test counts as failed, and any hack flag scores 0.
 */
export class Verifier {
  readonly options: ResolvedVerifierOptions;
  private readonly admissions = new Map<string, Promise<TaskAdmission>>();
  private readonly resolvedTasks = new Map<string, Promise<Task>>();
  private readonly revisions = new WeakMap<Task, string>();
  private imageDigest: Promise<string> | undefined;

  constructor(options: VerifierOptions) {
    this.options = resolveVerifierOptions(options);
  }

  /** The configuration that changes verdicts, hashed into the version. */
  get config(): Readonly<Record<string, unknown>> {
    return { recipe: VERIFIER_RECIPE, timeoutMs: this.options.timeoutMs, referenceRuns: this.options.referenceRuns };
  }

  /** The configuration a task's verdicts depend on: its own spec (check kind and RewardSpec) and image, where it names them. */
  configFor(task: Task): Readonly<Record<string, unknown>> {
    const config: Record<string, unknown> = { ...this.config };
    if (task.image !== undefined) config.recipe = task.image;
    if (task.verification !== undefined) config.verification = task.verification;
    return config;
  }

  /** This verifier's version for tasks without a spec of their own; starts one sandbox the first time to learn the image digest. */
  async version(): Promise<string> {
    if (this.imageDigest === undefined) {
      this.imageDigest = this.withSandbox(VERIFIER_RECIPE, 'version', 0, async (sandbox) => sandbox.imageDigest);
      this.imageDigest.catch(() => (this.imageDigest = undefined));
    }
    return verifierVersion(this.config, await this.imageDigest);
  }

  /**
   * The task with its claim-checked trees read back from the artifact store (`Task.stored`); a task without
   * any is returned as it is. Kept for the last few tasks, so a large repository is read once.
   */
  resolveTask(task: Task): Promise<Task> {
    if (task.stored === undefined || Object.keys(task.stored).length === 0) return Promise.resolve(task);
    const key = revisionOf(task);
    let resolved = this.resolvedTasks.get(key);
    if (!resolved) {
      resolved = resolveStoredTrees(task, this.options.trees).then((full) => {
        this.revisions.set(full, key);
        return full;
      });
      resolved.catch(() => this.resolvedTasks.delete(key));
      this.resolvedTasks.set(key, resolved);
      while (this.resolvedTasks.size > RESOLVED_TASKS_KEPT) this.resolvedTasks.delete(this.resolvedTasks.keys().next().value!);
    }
    return resolved;
  }

  /** A trajectory's final files: inline, or read back from the artifact store (`finalFilesRef`). */
  async finalFilesOf(trajectory: Trajectory): Promise<FileTree> {
    const ref = trajectory.finalFilesRef ?? null;
    if (ref === null) return trajectory.finalFiles;
    if (this.options.trees === null) throw new ConfigError(`trajectory ${trajectory.trajectoryId} keeps its final files in the artifact store (${ref.digest}), and this verifier has none configured (VerifierOptions.trees)`);
    return this.options.trees.get(ref);
  }

  async verify(trajectory: Trajectory, signal: AbortSignal, rescoreId: string | null = null): Promise<Verification> {
    const started = performance.now();
    const task = await this.resolveTask(this.options.tasks.get(trajectory.lineage.taskId));
    const finalFiles = await this.finalFilesOf(trajectory);
    const admission = await this.admit(task, signal);
    const checked = await this.check(task, finalFiles, admission.expected, signal, trajectory.steps, trajectory.finalExtras);
    const version = checked.verifierVersion;
    return {
      verificationId: rescoreId === null ? `${trajectory.trajectoryId}/${version}` : `${trajectory.trajectoryId}/${version}/${rescoreId}`,
      trajectoryId: trajectory.trajectoryId,
      groupId: trajectory.groupId,
      groupSize: trajectory.groupSize,
      passed: checked.passed,
      tests: checked.tests,
      testsPassed: checked.testsPassed,
      testsTotal: checked.testsTotal,
      fractionPassed: checked.fraction,
      failure: checked.failure,
      failureDetail: checked.failure === null ? null : checked.detail,
      durationMs: performance.now() - started,
      hacks: summariseFlags(checked.hacks),
      unwritten: checked.unwritten,
      quarantine: admission.quarantine,
      score: checked.score,
      checkKind: checked.checkKind,
      rescoreId,
      lineage: { ...trajectory.lineage, sandboxImageDigest: checked.imageDigest, verifierVersion: version, createdAt: nowIso() },
    };
  }

  /**
   * Settles the ids a task's verifications are judged on (see `expectedIds`) and, when the task has a reference
   * solution, runs it `referenceRuns` times: verdicts that differ quarantine the task as flaky, a reference that
   * always fails (or ids that cannot be had) as broken. Settled once per task revision and shared by concurrent calls.
   */
  admit(task: Task, signal: AbortSignal): Promise<TaskAdmission> {
    const key = this.revisionOf(task);
    let admission = this.admissions.get(key);
    if (!admission) {
      admission = this.settleAdmission(task, signal);
      admission.catch(() => this.admissions.delete(key));
      this.admissions.set(key, admission);
    }
    return admission;
  }

  /**
   * The ids a task is judged on. The pytest runner collects them from the pristine task: the spec's FAIL_TO_PASS
   * and PASS_TO_PASS ids, each of which must be collected, or without lists every test collected, of which some
   * must be hidden. Other kinds take them from the spec: the listed tests (none: every test the report holds), one
   * per output check, the script's reward.
   */
  async expectedIds(task: Task, signal: AbortSignal): Promise<{ ids: string[]; problem: string | null }> {
    const spec = specOf(task);
    const problem = specProblem(spec);
    if (problem !== null) return { ids: [], problem };
    if (!isPytest(spec)) return { ids: gradedIds(spec.check as GradedCheck), problem: null };
    const collected = await this.collect(task, signal);
    const { failToPass, passToPass } = spec.check as { failToPass: string[]; passToPass: string[] };
    const listed = [...new Set([...failToPass, ...passToPass])];
    if (listed.length === 0 || collected.ids.length === 0) return collected;
    const found = new Set(collected.ids);
    const absent = listed.filter((id) => !found.has(id));
    if (absent.length > 0) {
      return { ids: [], problem: `the spec lists ${absent.length} test id(s) the pristine task does not have: ${absent.slice(0, 5).join(', ')}; collected ${collected.ids.slice(0, 5).join(', ')}${collected.ids.length > 5 ? ', ...' : ''}` };
    }
    return { ids: listed, problem: collected.problem };
  }

  /** The test ids of the pristine task, visible and hidden (collected with the reference solution, else the starting files). */
  async collect(task: Task, signal: AbortSignal): Promise<{ ids: string[]; problem: string | null }> {
    const pristine = { files: { ...task.files, ...(task.referenceSolution ?? {}) }, rawNamedFiles: [], symlinks: [], flags: [], unwritten: null };
    const { result } = await this.runInSandbox(task, pristine, task.hiddenTests, 'collect', signal);
    // The pristine task runs no agent code: a runner that fails here is infrastructure, retried, never a verdict on the task.
    if (result.runnerFailure !== undefined) throw new SandboxError(`collecting the tests of ${task.taskId} failed: ${result.runnerFailure.evidence}`, { retriable: true });
    if (result.setupError !== undefined) return { ids: [], problem: `setting up the collection failed: ${result.setupError}` };
    const collected = result.witness.find((e) => e.event === 'collected');
    const ids = Array.isArray(collected?.items) ? collected.items.filter((id): id is string => typeof id === 'string') : [];
    const errors = result.witness.filter((e) => e.event === 'collect-error').map(describeCollectError);
    const hidden = new Set(Object.keys(task.hiddenTests));
    // Without a hidden test the verdict would rest on tests the agent has seen.
    if (!ids.some((id) => hidden.has(id.split('::')[0]!))) {
      return { ids: [], problem: withOutput(`collecting the hidden tests found none${errors.length ? ` (${errors.join('; ')})` : ''}`, result.output.slice(-300)) };
    }
    return { ids, problem: errors.length ? `collection errors: ${errors.join('; ')}` : null };
  }

  /** Verifies a file tree against a (resolved) task: the final files of a trajectory, a reference or a variant. */
  async check(task: Task, finalFiles: FileTree, expected: readonly string[], signal: AbortSignal, steps: readonly Step[] = [], extras: WorkspaceExtras = NO_WORKSPACE_EXTRAS): Promise<Checked> {
    const started = performance.now();
    const spec = specOf(task);
    const problem = specProblem(spec);
    if (problem !== null) throw new ConfigError(`task ${task.taskId} cannot be verified: ${problem}`);
    const screened = screenFinalFiles(task, finalFiles, extras);
    const flags: HackFlag[] = [...screened.flags, ...screenSteps(task, steps)];
    let judgement: Judgement & { fraction: number; testsTotal: number };
    let runnerFailure: RunnerFailure | null;
    let imageDigest: string;
    if (isPytest(spec)) {
      const planted = plantCanaries(task.hiddenTests);
      const run = await this.runInSandbox(task, screened, planted.files, 'verify', signal);
      const judged = judge({ expected, canaries: planted.canaries, run: run.result, screened: flags, modules: testModules(taskTestFiles(task)) });
      judgement = { ...judged, testsTotal: expected.length, fraction: expected.length ? judged.testsPassed / expected.length : 0 };
      [runnerFailure, imageDigest] = [run.result.runnerFailure ?? null, run.imageDigest];
    } else {
      const graded = await this.grade(task, spec.check as GradedCheck, screened, flags, expected, signal);
      judgement = { ...graded.judgement, testsTotal: graded.judgement.tests.length };
      [runnerFailure, imageDigest] = [graded.runnerFailure, graded.imageDigest];
    }
    const score = scoreOf(resolveRewardSpec(spec.reward), { passed: judgement.passed, fraction: judgement.fraction, hacked: judgement.hacks.length > 0, toolCalls: steps.length });
    return {
      ...judgement,
      runnerFailure,
      score,
      checkKind: spec.check.kind,
      verifierVersion: verifierVersion(this.configFor(task), imageDigest),
      imageDigest,
      durationMs: performance.now() - started,
      unwritten: screened.unwritten,
    };
  }

  private revisionOf(task: Task): string {
    return this.revisions.get(task) ?? revisionOf(task);
  }

  private async settleAdmission(task: Task, signal: AbortSignal): Promise<TaskAdmission> {
    const collected = await this.expectedIds(task, signal);
    if (collected.ids.length === 0 && (isPytest(specOf(task)) || collected.problem !== null)) {
      return { expected: [], quarantine: { reason: `broken task: ${collected.problem ?? 'no hidden tests'}`, referenceVerdicts: [] } };
    }
    if (task.referenceSolution === null || this.options.referenceRuns === 0) return { expected: collected.ids, quarantine: null };
    const verdicts: boolean[] = [];
    const failures: string[] = [];
    // One after another: concurrent runs would share the CPU and could make a slow task look flaky.
    for (let run = 0; run < this.options.referenceRuns; run++) {
      const checked = await this.check(task, { ...task.files, ...task.referenceSolution }, collected.ids, signal);
      if (checked.runnerFailure !== null) throw new SandboxError(`the reference run of ${task.taskId} failed: ${checked.runnerFailure.evidence}`, { retriable: true });
      verdicts.push(checked.passed);
      if (!checked.passed) failures.push(describeFailure(checked));
    }
    if (verdicts.every(Boolean)) return { expected: collected.ids, quarantine: null };
    const why = verdicts.some(Boolean)
      ? `flaky: the reference solution's verdict changed across ${verdicts.length} runs (${verdictList(verdicts)})`
      : `broken task: the reference solution failed all ${verdicts.length} runs`;
    return { expected: collected.ids, quarantine: { reason: `${why}; ${[...new Set(failures)].join('; ').slice(0, 1500)}`, referenceVerdicts: verdicts } };
  }

  /**
   * A check other than the pytest runner's: the runner sets the grading sandbox up (the agent's screened files,
   * then the task's pristine files, an output check's expected files left out), the check's command runs, and
   * what it produced is judged here. A report path the agent's files hold is flagged and never written.
   */
  private async grade(task: Task, check: GradedCheck, screened: Screened, flags: readonly HackFlag[], expected: readonly string[], signal: AbortSignal): Promise<{ judgement: Awaited<ReturnType<typeof judgeGraded>>; runnerFailure: RunnerFailure | null; imageDigest: string }> {
    const allFlags = [...flags];
    let agent = screened;
    if (check.kind === 'tests') {
      // The report's path is the command's alone: a file or a symlink of the agent's there (or on the way) could stand in for it.
      const report = check.junitPath!;
      const inTheWay = (path: string): boolean => path === report || report.startsWith(`${path}/`);
      const links = screened.symlinks.filter((link) => inTheWay(Buffer.from(link.path, 'base64').toString('utf8')));
      if (report in screened.files || links.length > 0) {
        const { [report]: _forged, ...files } = screened.files;
        allFlags.push({ kind: 'fake-report', evidence: `the final files hold ${links.length ? 'a symlink at or above ' : ''}${report}, where the test command writes its JUnit report`, path: report, line: null, source: 'files' });
        agent = { ...screened, files, symlinks: screened.symlinks.filter((link) => !links.includes(link)) };
      }
    }
    const hostOnly = hostOnlyFiles(check);
    const hidden = Object.fromEntries(Object.entries(task.hiddenTests).filter(([path]) => !hostOnly.has(path)));
    type Graded = { setup: RunnerResult; run: GradeRun | null };
    const { result, imageDigest } = await this.inFreshSandbox<Graded>(
      task,
      async (sandbox) => {
        const setup = await this.runOnce(sandbox, task, agent, hidden, 'setup', signal);
        if (setup.runnerFailure !== undefined || setup.setupError !== undefined) return { setup, run: null };
        return { setup, run: await runGradedCheck(sandbox, check, this.options.timeoutMs, signal) };
      },
      (failure) => ({ setup: RunnerResult.parse({ undumpable: false, runnerFailure: failure }), run: null }),
      signal,
    );
    if (result.setup.runnerFailure !== undefined) {
      const failure = result.setup.runnerFailure;
      // Setting up runs no agent code; a runner lost there is ours, as a sandbox lost under the check is.
      const judgement = { tests: expected.map((id) => ({ id, outcome: 'missing' as const, durationMs: 0, message: failure.evidence.slice(0, 500) })), testsPassed: 0, fraction: 0, failure: 'sandbox-error' as const, hacks: allFlags, passed: false, detail: failure.evidence };
      return { judgement, runnerFailure: failure, imageDigest };
    }
    return { judgement: await judgeGraded(check, result.setup, result.run, expected, allFlags, task.hiddenTests), runnerFailure: null, imageDigest };
  }

  /**
   * Runs the runner in a fresh sandbox. Nothing the agent's code does there may escape as an exception
   * (a retried exception ends as a dead letter): a runner that dies, hangs or prints garbage becomes a
   * result naming how it ended.
   */
  private async runInSandbox(task: Task, agent: Screened, hiddenTests: FileTree, mode: 'collect' | 'verify', signal: AbortSignal): Promise<{ result: RunnerResult; imageDigest: string }> {
    return this.inFreshSandbox(
      task,
      (sandbox) => this.runOnce(sandbox, task, agent, hiddenTests, mode, signal),
      (failure) => RunnerResult.parse({ undumpable: false, runnerFailure: failure }),
      signal,
    );
  }

  /**
   * Runs `use` in a fresh sandbox of the task's image. A sandbox lost under the run is run once more in a fresh
   * one; lost twice in a row it becomes `lostTwice`'s result, while a sandbox that cannot be had at all is
   * infrastructure that is down, and throws (retriable).
   */
  private async inFreshSandbox<T>(task: Task, use: (sandbox: Sandbox) => Promise<T>, lostTwice: (failure: RunnerFailure) => T, signal: AbortSignal): Promise<{ result: T; imageDigest: string }> {
    const losses: string[] = [];
    for (;;) {
      type Outcome = { result: T; imageDigest: string } | { lost: string; imageDigest: string };
      const outcome = await this.withSandbox<Outcome>(task.image ?? VERIFIER_RECIPE, task.taskId, treeBytes(task.files) + treeBytes(task.visibleTests) + treeBytes(task.hiddenTests), async (sandbox) => {
        try {
          return { result: await use(sandbox), imageDigest: sandbox.imageDigest };
        } catch (error) {
          if (!(error instanceof SandboxError) || signal.aborted) throw error;
          return { lost: errorMessage(error), imageDigest: sandbox.imageDigest };
        }
      }, task.limits);
      if ('result' in outcome) return outcome;
      losses.push(outcome.lost);
      if (losses.length >= 2) {
        const failure: RunnerFailure = { kind: 'sandbox-lost', exitCode: null, signal: null, evidence: `the sandbox died under the run twice in a row: ${losses.join('; then: ')}` };
        return { result: lostTwice(failure), imageDigest: outcome.imageDigest };
      }
    }
  }

  private async runOnce(sandbox: Sandbox, task: Task, agent: Screened, hiddenTests: FileTree, mode: 'collect' | 'verify' | 'setup', signal: AbortSignal): Promise<RunnerResult> {
    const nonce = randomBytes(16).toString('hex');
    // The hidden files given here exclude what only the host reads (an output check's expected file).
    const taskTests = { ...treeTestModules(task), ...task.visibleTests, ...hiddenTests };
    const check = specOf(task).check;
    const timeoutMs = (isPytest(specOf(task)) ? check.timeoutMs : undefined) ?? this.options.timeoutMs;
    const job = {
      nonce,
      mode,
      timeoutS: timeoutMs / 1000,
      // A conftest.py the task itself ships is pristine; only then may pytest load conftests at all.
      allowConftest: Object.keys(taskTests).some((path) => path === 'conftest.py' || path.endsWith('/conftest.py')),
      agentFiles: agent.files,
      agentEscapedFiles: agent.rawNamedFiles,
      agentSymlinks: agent.symlinks,
      ownModules: Object.keys(task.files),
      taskFiles: taskTests,
      // Setting up for another kind of check runs no pytest: no module is made strict.
      tests: mode === 'setup' ? [] : testModules(taskTests),
      executor: EXECUTOR_MODULE,
      runner: verifierScript('runner.py'),
      witness: verifierScript('witness.py'),
      strict: verifierScript('strict.py'),
    };
    const deadlineMs = timeoutMs + 20_000;
    const exec = await sandbox.exec(['python3', '-I', '-c', verifierScript('bootstrap.py')], {
      stdin: JSON.stringify(job),
      timeoutMs: deadlineMs,
      maxOutputBytes: 24 * 1024 * 1024,
      signal,
    });
    const line = exec.stdout.split('\n').find((l) => l.startsWith(nonce));
    if (line === undefined) {
      signal.throwIfAborted();
      // Out of memory is the agent's doing, and judged so; any other end without a result is described, never thrown.
      if (exec.status === 'oom') return RunnerResult.parse({ undumpable: false, oomKilled: true, output: exec.stderr });
      return RunnerResult.parse({ undumpable: false, runnerFailure: runnerEnd(exec, deadlineMs) });
    }
    try {
      return RunnerResult.parse(JSON.parse(line.slice(nonce.length)));
    } catch (error) {
      const evidence = `the verification runner printed a result that does not parse (${errorMessage(error).slice(0, 300)}); ${exec.truncated ? 'its output was cut at the size limit' : `the line is ${line.length} characters`}`;
      return RunnerResult.parse({ undumpable: false, runnerFailure: { kind: 'unreadable', exitCode: exec.exitCode, signal: null, evidence } });
    }
  }

  /** A fresh grading sandbox, sized for a workspace of `treeBytes` (the agent's final tree is about the task's). */
  private async withSandbox<T>(recipe: string, taskId: string, treeBytes: number, use: (sandbox: Sandbox) => Promise<T>, requested?: Task['limits']): Promise<T> {
    const sandbox = await this.options.pool.acquire({ image: this.options.imageFor(recipe), runId: this.options.runId, taskId, limits: limitsForWorkspace(treeBytes, requested) });
    try {
      return await use(sandbox);
    } finally {
      await sandbox.release();
    }
  }
}

/** How a runner that printed no result ended: the exit status or signal, its last progress line and its stderr tail. */
function runnerEnd(exec: ExecResult, deadlineMs: number): RunnerFailure {
  const lines = exec.stderr.split('\n').map((l) => l.trim()).filter(Boolean);
  const progress = lines.filter((l) => l.startsWith('trialrun-runner: ')).pop()?.slice('trialrun-runner: '.length);
  const last = progress === undefined ? 'before it wrote the files' : `after "${progress}"`;
  const rest = lines.filter((l) => !l.startsWith('trialrun-runner: ')).slice(-5).join(' | ').slice(-800);
  const stderr = rest ? `stderr: ${rest}` : 'its stderr held nothing else';
  if (exec.status === 'timeout') {
    return { kind: 'hung', exitCode: null, signal: null, evidence: `the verification runner gave no result within its ${deadlineMs} ms deadline (stopped, starved, or killed with the sandbox's command watcher) ${last}; ${stderr}` };
  }
  const code = exec.exitCode;
  const killedBy = code !== null && code > 128 ? code - 128 : null;
  if (killedBy !== null) {
    return { kind: 'killed', exitCode: code, signal: killedBy, evidence: `the verification runner was killed by signal ${killedBy} (exit ${code}) ${last}, with agent code running; ${stderr}` };
  }
  // Only a kill of the sandbox's process that watches each command (kill(-1) reaches it) loses the status.
  if (code === null) {
    return { kind: 'killed', exitCode: null, signal: null, evidence: `the verification runner ended with no exit status ${last}: the process that watched it in the sandbox was killed too; ${stderr}` };
  }
  return { kind: 'exited', exitCode: code, signal: null, evidence: `the verification runner exited with status ${String(code)} without a result ${last}; ${stderr}` };
}

/** One line on why a run did not pass, for quarantine reasons and calibration reports. */
export function describeFailure(checked: Pick<Judgement, 'failure' | 'hacks' | 'tests' | 'detail'>): string {
  if (checked.hacks.length > 0) return `flagged ${checked.hacks.map((h) => `${h.kind} (${h.evidence.slice(0, 160)})`).join(', ')}`;
  if (checked.failure !== null) return `${checked.failure}: ${(checked.detail ?? '').slice(0, 200)}`;
  const failing = checked.tests.filter((t) => t.outcome !== 'passed');
  return `${failing.length} test(s) not passed: ${failing.slice(0, 3).map((t) => `${t.id} ${t.outcome}`).join(', ')}`;
}

export interface VerifierProcessorOptions extends VerifierOptions, MembershipOptions {
  /** Which trajectories this processor verifies; the others are committed past. @default all */
  accept?: Accept<'trajectories'>;
}

export function createVerifierProcessor(context: ProcessorContext, options: VerifierProcessorOptions): StreamProcessor<'trajectories'> {
  const { accept, sessionTimeoutMs, ...verifierOptions } = options;
  const verifier = new Verifier(verifierOptions);
  return new StreamProcessor(
    context,
    { name: 'verifier', inputs: ['trajectories'], instanceId: verifier.options.instanceId, maxRecordsPerTransaction: 4, retry: SANDBOX_RETRY, timeoutMs: 180_000 + verifier.options.referenceRuns * (verifier.options.timeoutMs + 20_000), accept, sessionTimeoutMs, hostAvailable: allAnswer(verifier.options.pool.reachable?.bind(verifier.options.pool), verifier.options.trees ? storeAnswers(verifier.options.trees) : undefined) },
    async ({ record, signal }) => {
      const verification = await verifier.verify(record.value, signal);
      return [{ topic: 'verifications', key: verification.groupId, value: verification }];
    },
  );
}
