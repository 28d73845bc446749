import { createHash } from 'node:crypto';
import type { SandboxPool } from '../../../connectors/sandbox/index.js';
import { attemptsOf, errorMessage, finiteNumber, mapLimit, requireOption, resolveRetryOptions, SandboxError, wholeNumber, withRetries } from '../../../schemas/index.js';
import { helperSource } from './python.js';
import type { MutationKind } from './spec.js';

/** Correct code with its tests, to derive repair tasks from. */
export interface Problem {
  readonly key: string;
  readonly module: string;
  readonly source: string;
  readonly visibleTests: string;
  readonly hiddenTests: string;
}

/** One single-site edit as the edit tool lists it (`trialrun_repair.py list`). */
export interface Edit {
  readonly id: number;
  readonly kind: MutationKind;
  readonly line: number;
  readonly col: number;
  readonly end_line: number;
  readonly end_col: number;
  readonly before: string;
  readonly after: string;
}

export type MutantStatus = 'valid' | 'equivalent' | 'flaky' | 'slow';

export interface Mutant {
  readonly edit: Edit;
  /** The module with the edit applied: the buggy code of the derived task. */
  readonly source: string;
  readonly status: MutantStatus;
  readonly reason: string | null;
  readonly failedHidden: readonly string[];
  readonly failedVisible: readonly string[];
}

export interface ProblemResult {
  readonly key: string;
  readonly status: 'ok' | 'rejected';
  readonly reason: string | null;
  /** Candidate edits of the kinds asked for (only the first maxCandidates are tried). */
  readonly candidates: number;
  readonly mutants: readonly Mutant[];
}

export interface DeriveOptions {
  pool: SandboxPool;
  /** The python-repair image (its edit tool defines the mutations). */
  image: string;
  /** Lineage label on the sandboxes. */
  runId: string;
  kinds: readonly MutationKind[];
  perProblem: number;
  maxCandidates: number;
  runs: number;
  timeoutMs: number;
  /** Sandboxes at once. */
  sandboxes: number;
  problemsPerSandbox: number;
  seed: string;
  /** Extra tries of a batch whose sandbox failed (not its problems: a rejected problem is final). @default 2 */
  retries?: number;
  /** Called after each batch with problems done so far. */
  onProgress?: (done: number, total: number) => void;
  signal?: AbortSignal;
}

interface DriverAnswer {
  problems: Array<{
    key: string;
    status: 'ok' | 'rejected';
    reason: string | null;
    candidates: number;
    mutants: Array<{ edit: Edit; source: string; status: MutantStatus; reason: string | null; failed_hidden: string[]; failed_visible: string[] }>;
  }>;
}

const DRIVER = 'derive_mutants.py';

/** A stable id for a mutant: its problem, its kind and a short hash of where and what the edit is. */
export function mutantId(problemId: string, edit: Edit): string {
  const where = createHash('sha256').update(`${edit.line}:${edit.col}:${edit.end_line}:${edit.end_col}:${edit.after}`).digest('hex').slice(0, 8);
  return `${problemId}-${edit.kind}-${where}`;
}

/**
 * Validates single-site mutants of each problem in python-repair sandboxes (see
 * pipelines/jobs/task-job/python/derive_mutants.py): the original must pass every test in every run, a mutant
 * must fail the same hidden tests in every run. Problems go to the sandboxes in batches, several
 * sandboxes at once; a batch whose sandbox keeps failing is split, and a problem whose sandbox fails even
 * alone is rejected with the reason.
 */
export async function deriveMutants(problems: readonly Problem[], options: DeriveOptions): Promise<ProblemResult[]> {
  for (const field of ['perProblem', 'maxCandidates', 'runs', 'sandboxes', 'problemsPerSandbox'] as const) wholeNumber(`DeriveOptions.${field}`, options[field], { min: 1 });
  finiteNumber('DeriveOptions.timeoutMs', options.timeoutMs, { min: 500 });
  requireOption(options.kinds.length > 0, 'DeriveOptions.kinds', 'a list of at least one mutation kind', options.kinds);
  const driver = helperSource(DRIVER);
  const batches: Problem[][] = [];
  for (let i = 0; i < problems.length; i += options.problemsPerSandbox) batches.push(problems.slice(i, i + options.problemsPerSandbox));
  let done = 0;
  const results = await mapLimit(batches, options.sandboxes, async (batch) => {
    // Batches not started when the derivation is cancelled are never started.
    if (options.signal?.aborted) throw options.signal.reason ?? new Error('derivation was cancelled');
    const result = await validated(batch, driver, options);
    done += batch.length;
    options.onProgress?.(done, problems.length);
    return result;
  });
  return results.flat();
}

/**
 * A batch whose sandbox could not be started or died is tried again. One problem's content (a memory bomb, a
 * flood of output) can take the whole sandbox down, so a batch that still fails is split and each problem
 * tried alone: only the problems that fail on their own are rejected.
 */
async function validated(batch: readonly Problem[], driver: string, options: DeriveOptions, retries = options.retries ?? 2): Promise<ProblemResult[]> {
  const signal = options.signal ?? new AbortController().signal;
  try {
    // Only a failed sandbox is tried again; anything else rejects the batch at once.
    return await withRetries(() => validateBatch(batch, driver, options), resolveRetryOptions({ retries, initialDelayMs: 2000, maxDelayMs: 60_000 }), signal, (error) => error instanceof BatchFailure);
  } catch (error) {
    if (signal.aborted) throw error;
    if (error instanceof BatchFailure && batch.length > 1) {
      const alone: ProblemResult[] = [];
      for (const problem of batch) alone.push(...(await validated([problem], driver, options, Math.min(1, retries))));
      return alone;
    }
    const reason = error instanceof BatchFailure ? `${error.message} (after ${attemptsOf(error)} tries)` : `the validation sandbox failed: ${errorMessage(error)}`;
    return batch.map((problem) => ({ key: problem.key, status: 'rejected', reason, candidates: 0, mutants: [] }));
  }
}

/** The sandbox, not the code under test, failed: worth another try. */
class BatchFailure extends SandboxError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { retriable: true, cause: options.cause });
  }
}

async function validateBatch(batch: readonly Problem[], driver: string, options: DeriveOptions): Promise<ProblemResult[]> {
  const request = {
    timeout_s: options.timeoutMs / 1000,
    runs: options.runs,
    problems: batch.map((problem) => ({
      key: problem.key,
      module: problem.module,
      source: problem.source,
      visible_tests: problem.visibleTests,
      hidden_tests: problem.hiddenTests,
      kinds: options.kinds,
      per_problem: options.perProblem,
      max_candidates: options.maxCandidates,
      seed: options.seed,
    })),
  };
  // Worst case: every run of every candidate of every problem hits the full timeout.
  const budgetMs = batch.length * options.runs * (1 + options.maxCandidates) * options.timeoutMs + 60_000;
  let sandbox;
  try {
    sandbox = await options.pool.acquire({ image: options.image, runId: options.runId, taskId: `derive-${batch[0]!.key}`.slice(0, 60) });
  } catch (error) {
    throw new BatchFailure(`no validation sandbox: ${errorMessage(error)}`, { cause: error });
  }
  try {
    let exec;
    try {
      await sandbox.writeFiles({ [DRIVER]: driver });
      exec = await sandbox.exec(['python3', DRIVER], { stdin: JSON.stringify(request), timeoutMs: budgetMs, maxOutputBytes: 64 * 1024 * 1024, signal: options.signal });
    } catch (error) {
      if (options.signal?.aborted) throw error;
      throw new BatchFailure(`the validation sandbox failed: ${errorMessage(error)}`, { cause: error });
    }
    if (exec.status !== 'exited' || exec.exitCode !== 0) {
      // The driver catches what the code under test does; a dead driver means the sandbox itself gave out (OOM, engine).
      throw new BatchFailure(`the validation sandbox ${exec.status === 'exited' ? `exited with ${exec.exitCode}` : `ended by ${exec.status}`}: ${exec.stderr.trim().split('\n').slice(-3).join(' | ') || 'no output'}`);
    }
    let answer: DriverAnswer;
    try {
      answer = JSON.parse(exec.stdout) as DriverAnswer;
    } catch (error) {
      throw new BatchFailure(`the validation driver's answer is not JSON${exec.truncated ? ' (its output was cut at 64 MiB)' : ''}: ${errorMessage(error)}`, { cause: error });
    }
    return answer.problems.map((problem) => ({
      key: problem.key,
      status: problem.status,
      reason: problem.reason,
      candidates: problem.candidates,
      mutants: problem.mutants.map((mutant) => ({
        edit: mutant.edit,
        source: mutant.source,
        status: mutant.status,
        reason: mutant.reason,
        failedHidden: mutant.failed_hidden,
        failedVisible: mutant.failed_visible,
      })),
    }));
  } finally {
    await sandbox.release().catch(() => undefined);
  }
}
