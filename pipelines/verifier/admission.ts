import { SandboxError, type FileTree, type Quarantine, type Task } from '../../schemas/index.js';
import type { Judgement, RunnerFailure } from './judge.js';
import type { ExpectedIds, VerificationKind } from './kinds/index.js';

/** A task's hidden test ids and whether its verdicts can be trusted, settled once per task revision. */
export interface TaskAdmission {
  readonly expected: readonly string[];
  readonly quarantine: Quarantine | null;
}

/** What admission needs of the verifier: the ids a task is judged on and one checked run of a tree. */
export interface AdmissionChecks {
  expectedIds(task: Task, signal: AbortSignal): Promise<ExpectedIds>;
  check(task: Task, finalFiles: FileTree, expected: readonly string[], signal: AbortSignal): Promise<Judgement & { readonly runnerFailure: RunnerFailure | null }>;
}

const verdictList = (verdicts: readonly boolean[]): string => verdicts.map((v) => (v ? 'pass' : 'fail')).join(', ');

/**
 * Settles the ids a task's verifications are judged on and, when the task has a reference solution, runs it
 * `referenceRuns` times: verdicts that differ quarantine the task as flaky, a reference that always fails (or ids
 * that cannot be had) as broken.
 */
export async function settleAdmission(task: Task, kind: VerificationKind, referenceRuns: number, checks: AdmissionChecks, signal: AbortSignal): Promise<TaskAdmission> {
  const collected = await checks.expectedIds(task, signal);
  if (collected.ids.length === 0 && (kind.idsRequired || collected.problem !== null)) {
    return { expected: [], quarantine: { reason: `broken task: ${collected.problem ?? 'no hidden tests'}`, referenceVerdicts: [] } };
  }
  if (task.referenceSolution === null || referenceRuns === 0) return { expected: collected.ids, quarantine: null };
  const verdicts: boolean[] = [];
  const failures: string[] = [];
  // One after another: concurrent runs would share the CPU and could make a slow task look flaky.
  for (let run = 0; run < referenceRuns; run++) {
    const checked = await checks.check(task, { ...task.files, ...task.referenceSolution }, collected.ids, signal);
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

/** One line on why a run did not pass, for quarantine reasons and calibration reports. */
export function describeFailure(checked: Pick<Judgement, 'failure' | 'hacks' | 'tests' | 'detail'>): string {
  if (checked.hacks.length > 0) return `flagged ${checked.hacks.map((h) => `${h.kind} (${h.evidence.slice(0, 160)})`).join(', ')}`;
  if (checked.failure !== null) return `${checked.failure}: ${(checked.detail ?? '').slice(0, 200)}`;
  const failing = checked.tests.filter((t) => t.outcome !== 'passed');
  return `${failing.length} test(s) not passed: ${failing.slice(0, 3).map((t) => `${t.id} ${t.outcome}`).join(', ')}`;
}
