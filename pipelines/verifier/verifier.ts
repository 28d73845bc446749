import { createHash } from 'node:crypto';
import { resolveStoredTrees } from '../../connectors/artifacts/index.js';
import {
  ConfigError,
  NO_WORKSPACE_EXTRAS,
  nowIso,
  PYTEST_REPAIR_VERIFICATION,
  type FileTree,
  type HackFlag,
  type Step,
  type Task,
  type Trajectory,
  type Verification,
  type VerificationSpec,
  type WorkspaceExtras,
} from '../../schemas/index.js';
import { settleAdmission, type TaskAdmission } from './admission.js';
import { summariseFlags, type Judgement, type RunnerFailure } from './judge.js';
import { VERIFICATION_KINDS, type ExpectedIds, type KindContext, type VerificationKind } from './kinds/index.js';
import { resolveVerifierOptions, type ResolvedVerifierOptions, type VerifierOptions } from './options.js';
import { GradingSandboxes, VERIFIER_RECIPE } from './sandboxes.js';
import { resolveRewardSpec, scoreOf } from './score.js';
import { screenFinalFiles, screenSteps, type Unwritten } from './screening.js';
import { verifierVersion } from './version.js';

/** How a task is verified: its own spec, or program repair's pytest run. */
export const specOf = (task: Task): VerificationSpec => task.verification ?? PYTEST_REPAIR_VERIFICATION;

/** Tree-store lookups kept resolved (a 50 MB repository is read once, not once per trajectory). */
const RESOLVED_TASKS_KEPT = 16;

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

/** A task revision's identity: the tasks topic is compacted, and a changed task must be admitted anew. */
function revisionOf(task: Task): string {
  const body = JSON.stringify([task.taskId, task.files, task.visibleTests, task.hiddenTests, task.referenceSolution, task.verification ?? null, task.image ?? null]);
  return `${task.taskId}@${createHash('sha256').update(body).digest('hex').slice(0, 16)}`;
}

/**
 * Scores a trajectory by the task's verification spec (`Task.verification`; program repair's pytest run when it
 * has none), in a fresh grading sandbox that the agent never touched: the agent's final files are screened
 * (conftest.py, plugins, start-up hooks, runner configs, edited tests never reach the sandbox) and written first,
 * then the task's pristine visible tests and hidden files (which never enter an agent's sandbox), then the check
 * runs. How a check runs and is judged is its kind's (`VERIFICATION_KINDS`, one folder each under kinds/); what
 * is the same for every kind is here: screening, admission with the reference solution, the RewardSpec and the
 * version. A missing, skipped or erroring test counts as failed, and any hack flag scores 0.
 */
export class Verifier {
  readonly options: ResolvedVerifierOptions;
  private readonly sandboxes: GradingSandboxes;
  private readonly admissions = new Map<string, Promise<TaskAdmission>>();
  private readonly resolvedTasks = new Map<string, Promise<Task>>();
  private readonly revisions = new WeakMap<Task, string>();
  private imageDigest: Promise<string> | undefined;

  constructor(options: VerifierOptions) {
    this.options = resolveVerifierOptions(options);
    this.sandboxes = new GradingSandboxes(this.options);
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
      this.imageDigest = this.sandboxes.withSandbox(VERIFIER_RECIPE, 'version', 0, async (sandbox) => sandbox.imageDigest);
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
   * solution, runs it `referenceRuns` times (see `settleAdmission`). Settled once per task revision and shared by
   * concurrent calls.
   */
  admit(task: Task, signal: AbortSignal): Promise<TaskAdmission> {
    const key = this.revisionOf(task);
    let admission = this.admissions.get(key);
    if (!admission) {
      admission = settleAdmission(task, VERIFICATION_KINDS.of(specOf(task).check), this.options.referenceRuns, this, signal);
      admission.catch(() => this.admissions.delete(key));
      this.admissions.set(key, admission);
    }
    return admission;
  }

  /**
   * The ids a task is judged on, as its kind has them: collected from the pristine task (pytest), or from the
   * spec (the listed tests, one per output check, the script's reward). A spec its kind cannot run is a problem.
   */
  async expectedIds(task: Task, signal: AbortSignal): Promise<ExpectedIds> {
    const { kind, context } = this.kindFor(task, signal);
    const problem = kind.problem(context.check);
    if (problem !== null) return { ids: [], problem };
    return kind.expectedIds(context);
  }

  /** Verifies a file tree against a (resolved) task: the final files of a trajectory, a reference or a variant. */
  async check(task: Task, finalFiles: FileTree, expected: readonly string[], signal: AbortSignal, steps: readonly Step[] = [], extras: WorkspaceExtras = NO_WORKSPACE_EXTRAS): Promise<Checked> {
    const started = performance.now();
    const spec = specOf(task);
    const { kind, context } = this.kindFor(task, signal);
    const problem = kind.problem(context.check);
    if (problem !== null) throw new ConfigError(`task ${task.taskId} cannot be verified: ${problem}`);
    const screened = screenFinalFiles(task, finalFiles, extras);
    const flags: HackFlag[] = [...screened.flags, ...screenSteps(task, steps)];
    const { judgement, runnerFailure, imageDigest } = await kind.check(context, screened, flags, expected);
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

  /** The kind that runs the task's check, with what it is given to work on the task. */
  private kindFor(task: Task, signal: AbortSignal): { kind: VerificationKind; context: KindContext } {
    const { check } = specOf(task);
    return { kind: VERIFICATION_KINDS.of(check), context: { task, check, sandboxes: this.sandboxes, timeoutMs: this.options.timeoutMs, signal } };
  }

  private revisionOf(task: Task): string {
    return this.revisions.get(task) ?? revisionOf(task);
  }
}
