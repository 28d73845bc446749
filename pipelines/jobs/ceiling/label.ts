import { createHash } from 'node:crypto';
import type { SandboxPool } from '../../../connectors/sandbox/index.js';
import { checkTaskPayload, ENVIRONMENTS, makeEnv, PROGRAM_REPAIR_ENV, type Environment, type RepairObservation } from '../../../envs/index.js';
import { repairMove } from '../../../policies/index.js';
import {
  ConfigError,
  errorMessage,
  mapLimit,
  NO_WORKSPACE_EXTRAS,
  nowIso,
  resolveRetryOptions,
  SandboxError,
  wholeNumber,
  withRetries,
  type FileTree,
  type Task,
  type ToolCall,
  type Trajectory,
} from '../../../schemas/index.js';
import type { Verifier } from '../../verifier/index.js';
import { evaluationVerifier } from '../evaluate/index.js';

/** What trying one candidate edit at the first choice does: the visible tests' verdict, and the verifier's when they pass. */
export interface CandidateLabel {
  readonly id: number;
  readonly visiblePass: boolean;
  /** The verifier passed the module with this edit (hidden tests); only ever true when `visiblePass`. */
  readonly solves: boolean;
}

/** How the script's episode ends on a task where it never reaches a choice. */
export interface NoChoice {
  /** Why there is no choice: the tests pass unedited, no candidate edits, the script repeats a failing call. */
  readonly reason: string;
  /** The tool call that submits; null when the script would repeat its failing call until the turn cap. */
  readonly submitsAtTurn: number | null;
  /** The verifier's verdict on what the script submits (the unedited module). */
  readonly solves: boolean;
}

/**
 * What a label line holds, by version: a line of another format is not read (its task is labelled again).
 * 2: the observation's test runs carry the module's line spectrum.
 */
export const LABEL_FORMAT = 2 as const;

/**
 * Everything needed to replay the repair script on one task without a sandbox, for any choice rule: the
 * observation at the script's first choice (the second is `afterFailedTry` of it) and each candidate's outcome.
 */
export interface TaskLabel {
  readonly format: typeof LABEL_FORMAT;
  readonly taskId: string;
  /** `moduleSha256(task)` when labelled: a task whose module changed is labelled again. */
  readonly moduleSha256: string;
  /**
   * The observation at the first choice (what `repairMove` first answered `choose-edit` to), or null when there is
   * none. Its `maxTurns` is the labelling cap (LABEL_MAX_TURNS): a replay puts its own episode length in.
   */
  readonly observation: RepairObservation | null;
  /** One per candidate edit of the first choice, in the order of `observation.edits`; empty without a choice. */
  readonly candidates: readonly CandidateLabel[];
  /** Set exactly when `observation` is null. */
  readonly noChoice: NoChoice | null;
  readonly labelledAt: string;
}

/**
 * The labelling episode's turn cap: every candidate costs up to four calls (apply, run tests, read, revert), and
 * the script's rule `turn + 2 > maxTurns -> submit` must never cut a labelling episode short.
 */
export const LABEL_MAX_TURNS = 1_000_000;
/** Scripted calls before the first choice: the script needs two (run the tests, list the edits); more means it repeats a failing one. */
const SCRIPTED_CALLS_BEFORE_CHOICE = 6;
const RETRY = resolveRetryOptions({ retries: 2, initialDelayMs: 1000, maxDelayMs: 10_000 });

export interface LabelOptions {
  pool: SandboxPool;
  imageFor: (recipe: string) => string;
  /** Names the sandboxes and the verifications' lineage. @default 'ceiling' */
  runId?: string;
  /** Tasks labelled at once, each in one sandbox (its verifications take one more each). @default 2 */
  concurrency?: number;
  /**
   * Judges the visible passes with the hidden tests.
   * @default evaluationVerifier(tasks, { pool, imageFor, runId })
   */
  verifier?: Verifier;
  /** Called with each task's label as soon as it is done (append it to the labels file, so a stopped job resumes). @default none */
  onLabel?: (label: TaskLabel) => void | Promise<void>;
  /** @default none */
  onProgress?: (done: number, total: number, label: TaskLabel) => void;
  /** @default none */
  signal?: AbortSignal;
}

/** What a set of labels holds. */
export interface LabelCounts {
  readonly tasks: number;
  readonly candidates: number;
  /** Candidates whose edit passes the visible tests. */
  readonly visiblePasses: number;
  /** Candidates whose edit the verifier passes (hidden tests). */
  readonly solves: number;
  /** Tasks where the script never reaches a choice. */
  readonly withoutChoice: number;
}

export function countLabels(labels: readonly TaskLabel[]): LabelCounts {
  const candidates = labels.flatMap((label) => label.candidates);
  return {
    tasks: labels.length,
    candidates: candidates.length,
    visiblePasses: candidates.filter((candidate) => candidate.visiblePass).length,
    solves: candidates.filter((candidate) => candidate.solves).length,
    withoutChoice: labels.filter((label) => label.noChoice !== null).length,
  };
}

/** sha256 of the task's module as the task gives it: a label of another digest is of another task. */
export function moduleSha256(task: Task): string {
  const modules = Object.values(task.files);
  if (modules.length !== 1) throw new ConfigError(`task ${task.taskId}: program repair needs exactly one module in files, got ${modules.length}`);
  return createHash('sha256').update(modules[0]!).digest('hex');
}

/**
 * Refuses, with one ConfigError naming every such task, tasks that cannot be labelled: another environment than
 * program-repair/v1, a payload the environment refuses (not one module, no visible tests), trees kept in the
 * artifact store, or a task id given twice.
 */
export function checkLabellable(tasks: readonly Task[]): void {
  if (tasks.length === 0) throw new ConfigError('no tasks to label');
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const task of tasks) {
    if (seen.has(task.taskId)) problems.push(`${task.taskId}: given twice`);
    seen.add(task.taskId);
    if (task.envId !== PROGRAM_REPAIR_ENV) {
      problems.push(`${task.taskId}: environment ${task.envId}, not ${PROGRAM_REPAIR_ENV} (only the repair script's candidate edits can be labelled)`);
      continue;
    }
    const stored = Object.keys(task.stored ?? {});
    if (stored.length > 0) problems.push(`${task.taskId}: its ${stored.join(', ')} are kept in the artifact store, not inline`);
    try {
      checkTaskPayload(ENVIRONMENTS.get(PROGRAM_REPAIR_ENV), task);
    } catch (error) {
      problems.push(`${task.taskId}: ${errorMessage(error).replace(/\s+/g, ' ')}`);
    }
  }
  if (problems.length > 0) {
    const shown = problems.slice(0, 10).concat(problems.length > 10 ? [`and ${problems.length - 10} more`] : []);
    throw new ConfigError(`${problems.length} of ${tasks.length} tasks cannot be labelled:\n  ${shown.join('\n  ')}`);
  }
}

/**
 * Labels every candidate edit of each task's first choice: one environment per task, driven with its own tools as
 * the repair script drives it (run the tests, list the edits), then each candidate applied, the visible tests run,
 * the module judged by the verifier when they pass, and the edit reverted. Labels come back in the tasks' order.
 */
export async function labelCandidates(tasks: readonly Task[], options: LabelOptions): Promise<TaskLabel[]> {
  checkLabellable(tasks);
  const concurrency = options.concurrency ?? 2;
  wholeNumber('LabelOptions.concurrency', concurrency, { min: 1 });
  const runId = options.runId ?? 'ceiling';
  const signal = options.signal ?? new AbortController().signal;
  const verifier = options.verifier ?? evaluationVerifier(tasks, { pool: options.pool, imageFor: options.imageFor, runId });
  const labeller = new TaskLabeller(options.pool, options.imageFor, runId, verifier, signal);
  let done = 0;
  return mapLimit(tasks, concurrency, async (task) => {
    // A transient sandbox failure labels the task again from the start, in a fresh sandbox.
    const label = await withRetries(() => labeller.label(task), RETRY, signal);
    await options.onLabel?.(label);
    options.onProgress?.(++done, tasks.length, label);
    return label;
  });
}

/** One step of an episode, for the labeller: what it saw after the call, and what the call returned. */
type EnvStepOf = Awaited<ReturnType<Environment<RepairObservation>['step']>>;

class TaskLabeller {
  constructor(
    private readonly pool: SandboxPool,
    private readonly imageFor: (recipe: string) => string,
    private readonly runId: string,
    private readonly verifier: Verifier,
    private readonly signal: AbortSignal,
  ) {}

  async label(task: Task): Promise<TaskLabel> {
    const env = this.openEnv(task);
    try {
      const identity = { format: LABEL_FORMAT, taskId: task.taskId, moduleSha256: moduleSha256(task) };
      const reached = await this.firstChoice(env, task);
      if ('noChoice' in reached) return { ...identity, observation: null, candidates: [], noChoice: reached.noChoice, labelledAt: nowIso() };
      const { observation } = reached;
      const candidates: CandidateLabel[] = [];
      for (const edit of observation.edits ?? []) candidates.push(await this.tryEdit(env, task, observation.modulePath, edit.id));
      return { ...identity, observation, candidates, noChoice: null, labelledAt: nowIso() };
    } finally {
      await env.close();
    }
  }

  private openEnv(task: Task): Environment<RepairObservation> {
    return makeEnv(task.envId, { pool: this.pool, runId: this.runId, imageFor: this.imageFor, maxTurns: LABEL_MAX_TURNS }) as Environment<RepairObservation>;
  }

  /** Drives the script to its first choice, or to its submit when it never gets there. */
  private async firstChoice(env: Environment<RepairObservation>, task: Task): Promise<{ observation: RepairObservation } | { noChoice: NoChoice }> {
    let observation = await env.init(task, this.signal);
    for (let calls = 0; ; calls++) {
      const move = repairMove(observation);
      if (move.kind === 'choose-edit') return { observation };
      if (calls === SCRIPTED_CALLS_BEFORE_CHOICE) {
        // It keeps asking for what fails (a module list_edits cannot parse): in an episode it would until the cap.
        const reason = `the script repeats ${observation.lastTool ?? 'a call'}, which fails: ${observation.lastResult?.output.slice(0, 200) ?? ''}`;
        const submitted = await this.step(env, { name: 'submit', arguments: {} });
        return { noChoice: { reason, submitsAtTurn: null, solves: await this.judge(task, submitted.finalFiles ?? {}, 'no-choice') } };
      }
      const step = await this.step(env, move.action.action);
      if (step.done) {
        const reason = observation.lastTests?.passed ? 'the visible tests pass unedited' : observation.edits?.length === 0 ? 'no candidate edits' : `the script submits at turn ${step.observation.turn}`;
        return { noChoice: { reason, submitsAtTurn: step.observation.turn, solves: await this.judge(task, step.finalFiles ?? {}, 'no-choice') } };
      }
      observation = step.observation;
    }
  }

  /** Applies one candidate to the unedited module, runs the visible tests, judges a visible pass, and reverts. */
  private async tryEdit(env: Environment<RepairObservation>, task: Task, modulePath: string, id: number): Promise<CandidateLabel> {
    await this.expectOk(env, task, { name: 'apply_edit', arguments: { id } });
    const tested = await this.step(env, { name: 'run_tests', arguments: {} });
    const visiblePass = tested.observation.lastTests?.passed === true;
    let solves = false;
    if (visiblePass) {
      const read = await this.expectOk(env, task, { name: 'read_file', arguments: { path: modulePath } });
      // The env clips what a tool returns; a module longer than that is taken from a submit of its own episode.
      const module = read.result.truncated ? await this.submittedWith(task, id) : { [modulePath]: read.result.output };
      solves = await this.judge(task, module, `edit-${id}`);
    }
    await this.expectOk(env, task, { name: 'revert', arguments: {} });
    return { id, visiblePass, solves };
  }

  /** The files an episode submits after applying edit `id` to the unedited module. */
  private async submittedWith(task: Task, id: number): Promise<FileTree> {
    const env = this.openEnv(task);
    try {
      await env.init(task, this.signal);
      await this.expectOk(env, task, { name: 'apply_edit', arguments: { id } });
      return (await this.expectOk(env, task, { name: 'submit', arguments: {} })).finalFiles ?? {};
    } finally {
      await env.close();
    }
  }

  /** The verifier's verdict on `files` as a submitted episode's final files (built as the held-out evaluation builds its trajectories). */
  private async judge(task: Task, files: FileTree, what: string): Promise<boolean> {
    const trajectoryId = `${this.runId}/${task.taskId}/${what}`;
    const trajectory: Trajectory = {
      trajectoryId, groupId: trajectoryId, groupSize: 1, envId: task.envId, policyId: 'ceiling-labels', steps: [], finalFiles: files, finalExtras: NO_WORKSPACE_EXTRAS,
      outcome: 'submitted', error: null, totalMs: 0, sandboxMs: 0,
      lineage: { taskId: task.taskId, attempt: 0, runId: this.runId, policyVersion: 0, sandboxImageDigest: null, verifierVersion: null, createdAt: nowIso() },
    };
    return (await this.verifier.verify(trajectory, this.signal)).passed;
  }

  private step(env: Environment<RepairObservation>, call: ToolCall): Promise<EnvStepOf> {
    this.signal.throwIfAborted();
    return env.step(call, this.signal);
  }

  /**
   * A step the script's own calls must pass: the listed edits of the unedited module apply, and revert and read
   * work. One that fails here failed for a reason of the sandbox's (a helper that ran past its time under load),
   * so it is retried.
   */
  private async expectOk(env: Environment<RepairObservation>, task: Task, call: ToolCall): Promise<EnvStepOf> {
    const step = await this.step(env, call);
    if (!step.result.ok) throw new SandboxError(`labelling ${task.taskId}: ${call.name} ${JSON.stringify(call.arguments)} failed: ${step.result.output.slice(0, 300)}`, { retriable: true });
    return step;
  }
}
