import type { FileTree, HackFlag, OutputVerification, ScriptVerification } from '../../../schemas/index.js';
import type { RunnerResult } from '../judge.js';
import { COMMAND_KIND, type CommandCheck } from './command/index.js';
import { judgeGradedRun, type GradedJudgement, type GradedKind, type GradeRun } from './graded.js';
import type { Check } from './kind.js';
import { VerificationKindRegistry } from './kind.js';
import { OUTPUT_KIND } from './output/index.js';
import { PYTEST_KIND } from './pytest/index.js';
import { SCRIPT_KIND } from './script/index.js';

export * from './kind.js';
export { commandEnd, gradedKind, missingResult, readBack, type GradedJudgement, type GradedKind, type GradedKindSpec, type GradedRun, type GradeRun, type Verdict } from './graded.js';
export { COMMAND_KIND, type CommandCheck } from './command/index.js';
export { OUTPUT_KIND } from './output/index.js';
export { collectIds, PYTEST_KIND, type PytestCheck } from './pytest/index.js';
export { readReward, SCRIPT_KIND } from './script/index.js';

/** Every verification kind trialrun runs, listed here and nowhere else (a new one is added to this list). */
export const VERIFICATION_KINDS = new VerificationKindRegistry([PYTEST_KIND, COMMAND_KIND, SCRIPT_KIND, OUTPUT_KIND]);

/** The kinds whose check is one command judged on the host from what it produced (see graded.ts). */
const GRADED_KINDS: readonly GradedKind[] = [COMMAND_KIND, SCRIPT_KIND, OUTPUT_KIND];

/** A check of one of the graded kinds. */
export type GradedCheck = CommandCheck | ScriptVerification | OutputVerification;

function gradedKindOf(check: Check): GradedKind {
  const kind = GRADED_KINDS.find((k) => k.owns(check));
  if (kind === undefined) throw new TypeError(`check kind '${check.kind}' is not judged from one command's output`);
  return kind;
}

/** The ids a graded check is judged on: the listed tests, one entry per output check, or the script's reward. */
export const gradedIds = (check: GradedCheck): string[] => gradedKindOf(check).spec.ids(check);

/** The files of a graded check that only the host may read: an output check's expected files stay out of the sandbox. */
export const hostOnlyFiles = (check: GradedCheck): Set<string> => gradedKindOf(check).spec.hostOnlyFiles?.(check) ?? new Set();

/**
 * Turns a grading run into a verdict. `expected` are the ids the check is judged on (see `gradedIds`); for a
 * test command without listed ids, every test in its report must pass, and there must be at least one.
 */
export const judgeGraded = (check: GradedCheck, setup: RunnerResult, run: GradeRun | null, expected: readonly string[], screened: readonly HackFlag[], hidden: FileTree): Promise<GradedJudgement> =>
  judgeGradedRun(gradedKindOf(check).spec, check, setup, run, expected, screened, hidden);
