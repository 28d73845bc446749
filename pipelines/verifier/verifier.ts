import { createHash, randomBytes } from 'node:crypto';
import type { ExecResult, Sandbox, SandboxPool } from '../../connectors/sandbox/index.js';
import {
  ConfigError,
  errorMessage,
  NO_WORKSPACE_EXTRAS,
  nowIso,
  SandboxError,
  type FileTree,
  type HackFlag,
  type Quarantine,
  type Step,
  type Task,
  type Trajectory,
  type Verification,
  type WorkspaceExtras,
} from '../../schemas/index.js';
import { SANDBOX_RETRY, StreamProcessor, type Accept, type MembershipOptions, type ProcessorContext } from '../runtime/index.js';
import { isTestModule, plantCanaries } from './canary.js';
import { describeCollectError, judge, RunnerResult, withOutput, type Judgement, type RunnerFailure } from './judge.js';
import { verifierScript } from './sandbox-scripts.js';
import { screenFinalFiles, screenSteps, type Screened } from './screening.js';
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
}

export interface ResolvedVerifierOptions extends Required<VerifierOptions> {}

/** The sandbox recipe every verification runs in. */
export const VERIFIER_RECIPE = 'python-repair';

export function resolveVerifierOptions(options: VerifierOptions): ResolvedVerifierOptions {
  const resolved = { instanceId: '0', timeoutMs: 20_000, referenceRuns: 3, ...options };
  if (!Number.isInteger(resolved.timeoutMs) || resolved.timeoutMs < 1000 || resolved.timeoutMs > 600_000) {
    throw new ConfigError(`VerifierOptions.timeoutMs must be a whole number of ms from 1000 to 600000, got ${resolved.timeoutMs}`);
  }
  if (!Number.isInteger(resolved.referenceRuns) || resolved.referenceRuns < 0 || resolved.referenceRuns > 50) {
    throw new ConfigError(`VerifierOptions.referenceRuns must be a whole number from 0 to 50, got ${resolved.referenceRuns}`);
  }
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
  readonly verifierVersion: string;
  readonly imageDigest: string;
  readonly durationMs: number;
}

/** The pristine test modules pytest runs: visible and hidden, so a solution that breaks a visible test cannot score. */
const testModules = (tests: FileTree): string[] => Object.keys(tests).filter(isTestModule).sort();

/** A task revision's identity: the tasks topic is compacted, and a changed task must be admitted anew. */
function revisionOf(task: Task): string {
  const body = JSON.stringify([task.taskId, task.files, task.visibleTests, task.hiddenTests, task.referenceSolution]);
  return `${task.taskId}@${createHash('sha256').update(body).digest('hex').slice(0, 16)}`;
}

const verdictList = (verdicts: readonly boolean[]): string => verdicts.map((v) => (v ? 'pass' : 'fail')).join(', ');

/**
 * Scores a trajectory by running the task's pristine tests, hidden and visible, against the agent's
 * final files in a fresh sandbox that the agent never touched (the hidden tests never enter an agent's
 * sandbox; the visible ones are written fresh, so edits to them count for nothing). The final files are screened first (conftest.py, plugins,
 * start-up hooks, edited tests never reach the sandbox); inside it a trusted runner inspects the agent's
 * Python without importing it, runs pytest with a witness plugin and canary tests, and kills whatever
 * the run leaves behind. The verdict comes from pytest's JUnit report checked against the witness and
 * against the test ids collected from the pristine task: a missing, skipped or erroring test counts as
 * failed, and any hack flag scores 0. Reward 1 needs every hidden test to pass, and every visible one:
 * calibration found hidden suites that miss behaviour the visible tests pin down.
 */
export class Verifier {
  readonly options: ResolvedVerifierOptions;
  private readonly admissions = new Map<string, Promise<TaskAdmission>>();
  private imageDigest: Promise<string> | undefined;

  constructor(options: VerifierOptions) {
    this.options = resolveVerifierOptions(options);
  }

  /** The configuration that changes verdicts, hashed into the version. */
  get config(): Readonly<Record<string, unknown>> {
    return { recipe: VERIFIER_RECIPE, timeoutMs: this.options.timeoutMs, referenceRuns: this.options.referenceRuns };
  }

  /** This verifier's version; starts one sandbox the first time to learn the image digest. */
  async version(): Promise<string> {
    if (this.imageDigest === undefined) {
      this.imageDigest = this.withSandbox('version', async (sandbox) => sandbox.imageDigest);
      this.imageDigest.catch(() => (this.imageDigest = undefined));
    }
    return verifierVersion(this.config, await this.imageDigest);
  }

  async verify(trajectory: Trajectory, signal: AbortSignal, rescoreId: string | null = null): Promise<Verification> {
    const started = performance.now();
    const task = this.options.tasks.get(trajectory.lineage.taskId);
    const admission = await this.admit(task, signal);
    const checked = await this.check(task, trajectory.finalFiles, admission.expected, signal, trajectory.steps, trajectory.finalExtras);
    const version = checked.verifierVersion;
    return {
      verificationId: rescoreId === null ? `${trajectory.trajectoryId}/${version}` : `${trajectory.trajectoryId}/${version}/${rescoreId}`,
      trajectoryId: trajectory.trajectoryId,
      groupId: trajectory.groupId,
      groupSize: trajectory.groupSize,
      passed: checked.passed,
      tests: checked.tests,
      testsPassed: checked.testsPassed,
      testsTotal: admission.expected.length,
      fractionPassed: admission.expected.length ? checked.testsPassed / admission.expected.length : 0,
      failure: checked.failure,
      failureDetail: checked.failure === null ? null : checked.detail,
      durationMs: performance.now() - started,
      hacks: checked.hacks,
      quarantine: admission.quarantine,
      rescoreId,
      lineage: { ...trajectory.lineage, sandboxImageDigest: checked.imageDigest, verifierVersion: version, createdAt: nowIso() },
    };
  }

  /**
   * Collects the pristine task's hidden test ids and, when the task has a reference solution, runs it
   * `referenceRuns` times: verdicts that differ quarantine the task as flaky, a reference that always
   * fails (or finds no tests) as broken. Settled once per task revision and shared by concurrent calls.
   */
  admit(task: Task, signal: AbortSignal): Promise<TaskAdmission> {
    const key = revisionOf(task);
    let admission = this.admissions.get(key);
    if (!admission) {
      admission = this.settleAdmission(task, signal);
      admission.catch(() => this.admissions.delete(key));
      this.admissions.set(key, admission);
    }
    return admission;
  }

  /** The test ids of the pristine task, visible and hidden (collected with the reference solution, else the starting files). */
  async collect(task: Task, signal: AbortSignal): Promise<{ ids: string[]; problem: string | null }> {
    const pristine = { files: { ...task.files, ...(task.referenceSolution ?? {}) }, rawNamedFiles: [], symlinks: [], flags: [] };
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

  /** Verifies a file tree against a task (the final files of a trajectory, a reference or a variant). */
  async check(task: Task, finalFiles: FileTree, expected: readonly string[], signal: AbortSignal, steps: readonly Step[] = [], extras: WorkspaceExtras = NO_WORKSPACE_EXTRAS): Promise<Checked> {
    const started = performance.now();
    const screened = screenFinalFiles(task, finalFiles, extras);
    const flags: HackFlag[] = [...screened.flags, ...screenSteps(task, steps)];
    const planted = plantCanaries(task.hiddenTests);
    const { result, imageDigest } = await this.runInSandbox(task, screened, planted.files, 'verify', signal);
    const judgement = judge({ expected, canaries: planted.canaries, run: result, screened: flags });
    return { ...judgement, runnerFailure: result.runnerFailure ?? null, verifierVersion: verifierVersion(this.config, imageDigest), imageDigest, durationMs: performance.now() - started };
  }

  private async settleAdmission(task: Task, signal: AbortSignal): Promise<TaskAdmission> {
    const collected = await this.collect(task, signal);
    if (collected.ids.length === 0) return { expected: [], quarantine: { reason: `broken task: ${collected.problem ?? 'no hidden tests'}`, referenceVerdicts: [] } };
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
   * Runs the runner in a fresh sandbox. Nothing the agent's code does there may escape as an exception
   * (a retried exception ends as a dead letter): a runner that dies, hangs or prints garbage becomes a
   * result naming how it ended. A sandbox lost under the run is run once more in a fresh one; lost twice
   * in a row it becomes a result too, while a sandbox that cannot be had at all is infrastructure that is
   * down, and throws (retriable).
   */
  private async runInSandbox(task: Task, agent: Screened, hiddenTests: FileTree, mode: 'collect' | 'verify', signal: AbortSignal): Promise<{ result: RunnerResult; imageDigest: string }> {
    const losses: string[] = [];
    for (;;) {
      type Outcome = { result: RunnerResult; imageDigest: string } | { lost: string; imageDigest: string };
      const outcome = await this.withSandbox<Outcome>(task.taskId, async (sandbox) => {
        try {
          return { result: await this.runOnce(sandbox, task, agent, hiddenTests, mode, signal), imageDigest: sandbox.imageDigest };
        } catch (error) {
          if (!(error instanceof SandboxError) || signal.aborted) throw error;
          return { lost: errorMessage(error), imageDigest: sandbox.imageDigest };
        }
      });
      if ('result' in outcome) return outcome;
      losses.push(outcome.lost);
      if (losses.length >= 2) {
        const failure: RunnerFailure = { kind: 'sandbox-lost', exitCode: null, signal: null, evidence: `the sandbox died under the run twice in a row: ${losses.join('; then: ')}` };
        return { result: RunnerResult.parse({ undumpable: false, runnerFailure: failure }), imageDigest: outcome.imageDigest };
      }
    }
  }

  private async runOnce(sandbox: Sandbox, task: Task, agent: Screened, hiddenTests: FileTree, mode: 'collect' | 'verify', signal: AbortSignal): Promise<RunnerResult> {
    const nonce = randomBytes(16).toString('hex');
    const taskTests = { ...task.visibleTests, ...hiddenTests };
    const job = {
      nonce,
      mode,
      timeoutS: this.options.timeoutMs / 1000,
      // A conftest.py the task itself ships is pristine; only then may pytest load conftests at all.
      allowConftest: Object.keys(taskTests).some((path) => path === 'conftest.py' || path.endsWith('/conftest.py')),
      agentFiles: agent.files,
      agentEscapedFiles: agent.rawNamedFiles,
      agentSymlinks: agent.symlinks,
      ownModules: Object.keys(task.files),
      taskFiles: taskTests,
      tests: testModules(taskTests),
      runner: verifierScript('runner.py'),
      witness: verifierScript('witness.py'),
      strict: verifierScript('strict.py'),
    };
    const deadlineMs = this.options.timeoutMs + 20_000;
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

  private async withSandbox<T>(taskId: string, use: (sandbox: Sandbox) => Promise<T>): Promise<T> {
    const sandbox = await this.options.pool.acquire({ image: this.options.imageFor(VERIFIER_RECIPE), runId: this.options.runId, taskId });
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
    { name: 'verifier', inputs: ['trajectories'], instanceId: verifier.options.instanceId, maxRecordsPerTransaction: 4, retry: SANDBOX_RETRY, timeoutMs: 180_000 + verifier.options.referenceRuns * (verifier.options.timeoutMs + 20_000), accept, sessionTimeoutMs },
    async ({ record, signal }) => {
      const verification = await verifier.verify(record.value, signal);
      return [{ topic: 'verifications', key: verification.groupId, value: verification }];
    },
  );
}
