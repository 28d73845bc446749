import type { ExecResult, Sandbox } from '../../../connectors/sandbox/index.js';
import { HackKind, WorkspaceFileError, type FileTree, type HackFlag, type TestResult, type VerifyFailure } from '../../../schemas/index.js';
import { RunnerResult, withOutput, type RunnerFailure } from '../judge.js';
import type { ReadBack } from '../output-checks.js';
import type { Screened } from '../screening.js';
import type { Check, ExpectedIds, KindContext, KindVerdict, VerificationKind } from './kind.js';

/** What one grading run produced, before any judgement. */
export interface GradeRun {
  /** The command's end, or null for an output check without a command. */
  readonly exec: ExecResult | null;
  /** tests: the JUnit report's text, or why there is none. */
  readonly report?: ReadBack;
  /** script: the reward files as read back (absent: not written). */
  readonly rewardFiles?: { readonly txt?: ReadBack; readonly json?: ReadBack };
  /** output: each check target's text (a workspace path, or `stdout`). */
  readonly targets?: ReadonlyMap<string, ReadBack>;
}

export interface GradedJudgement {
  readonly tests: TestResult[];
  readonly testsPassed: number;
  /** The share of the judged ids that passed, or the script's reward. */
  readonly fraction: number;
  readonly failure: VerifyFailure | null;
  readonly hacks: HackFlag[];
  readonly passed: boolean;
  readonly detail: string | null;
}

/** Builds a verdict from the judged tests; `passed` defaults to "no failure, at least one test, all passed", and any hack fails it. */
export type Verdict = (tests: TestResult[], failure: VerifyFailure | null, detail: string | null, fraction?: number, passed?: boolean) => GradedJudgement;

/** What a graded kind's judge gets: the run, its command's end (`ended`: null when it exited), and the verdict builder. */
export interface GradedRun {
  readonly run: GradeRun;
  readonly exec: ExecResult | null;
  readonly ended: Exclude<ExecResult['status'], 'exited'> | null;
  readonly expected: readonly string[];
  /** The task's hidden files, where an output check's expected files are read on the host. */
  readonly hidden: FileTree;
  readonly verdict: Verdict;
}

/**
 * A kind whose check runs as one command in a grading sandbox that the trusted runner set up (its `setup` mode
 * writes the agent's screened files, then the task's pristine files), and is judged on the host from what the
 * command produced, read back. The sandbox's executor kills the command's whole process tree when it exits or
 * times out.
 */
export interface GradedKindSpec<C extends Check> {
  readonly name: string;
  owns(check: Check): check is C;
  /** @default no problem */
  problem?(check: C): string | null;
  /** The ids the check is judged on, from the spec alone. */
  ids(check: C): string[];
  /** Files of the check that only the host may read (kept out of the sandbox). @default none */
  hostOnlyFiles?(check: C): Set<string>;
  /** The agent's files as this kind lets them into the sandbox, with any flags it raises. @default the screened files as they are */
  admitFiles?(check: C, screened: Screened): { agent: Screened; flags: HackFlag[] };
  /** Runs the check's command in the set-up sandbox and reads back what the check needs. */
  run(sandbox: Sandbox, check: C, timeoutMs: number, signal: AbortSignal): Promise<GradeRun>;
  /** The verdict on what the run produced. */
  judge(check: C, graded: GradedRun): GradedJudgement | Promise<GradedJudgement>;
}

/** A graded kind (see `GradedKindSpec`) as a `VerificationKind`, with its spec's parts kept for the grading unit tests. */
export interface GradedKind<C extends Check = Check> extends VerificationKind<C> {
  readonly spec: GradedKindSpec<C>;
}

export function gradedKind<C extends Check>(spec: GradedKindSpec<C>): GradedKind<C> {
  return {
    name: spec.name,
    spec,
    owns: (check): check is C => spec.owns(check),
    problem: (check) => spec.problem?.(check) ?? null,
    idsRequired: false,
    expectedIds: async ({ check }): Promise<ExpectedIds> => ({ ids: spec.ids(check), problem: null }),
    check: (context, agent, flags, expected) => gradeInSandbox(spec, context, agent, flags, expected),
  };
}

/**
 * The grading flow: the runner sets the sandbox up (the agent's admitted files, then the task's pristine files,
 * host-only files left out), the check's command runs, and what it produced is judged here.
 */
async function gradeInSandbox<C extends Check>(spec: GradedKindSpec<C>, context: KindContext<C>, screened: Screened, flags: readonly HackFlag[], expected: readonly string[]): Promise<KindVerdict> {
  const { task, check, sandboxes, timeoutMs, signal } = context;
  const admitted = spec.admitFiles?.(check, screened) ?? { agent: screened, flags: [] };
  const allFlags = [...flags, ...admitted.flags];
  const hostOnly = spec.hostOnlyFiles?.(check) ?? new Set<string>();
  const hidden = Object.fromEntries(Object.entries(task.hiddenTests).filter(([path]) => !hostOnly.has(path)));
  type Graded = { setup: RunnerResult; run: GradeRun | null };
  const { result, imageDigest } = await sandboxes.inFresh<Graded>(
    task,
    async (sandbox) => {
      const setup = await sandboxes.runOnce(sandbox, task, admitted.agent, hidden, 'setup', timeoutMs, signal);
      if (setup.runnerFailure !== undefined || setup.setupError !== undefined) return { setup, run: null };
      return { setup, run: await spec.run(sandbox, check, check.timeoutMs ?? timeoutMs, signal) };
    },
    (failure) => ({ setup: RunnerResult.parse({ undumpable: false, runnerFailure: failure }), run: null }),
    signal,
  );
  if (result.setup.runnerFailure !== undefined) {
    const failure: RunnerFailure = result.setup.runnerFailure;
    // Setting up runs no agent code; a runner lost there is ours, as a sandbox lost under the check is.
    const judgement = { tests: expected.map((id) => ({ id, outcome: 'missing' as const, durationMs: 0, message: failure.evidence.slice(0, 500) })), testsPassed: 0, fraction: 0, failure: 'sandbox-error' as const, hacks: allFlags, passed: false, detail: failure.evidence };
    return { judgement: { ...judgement, testsTotal: judgement.tests.length }, runnerFailure: failure, imageDigest };
  }
  const judgement = await judgeGradedRun(spec, check, result.setup, result.run, expected, allFlags, task.hiddenTests);
  return { judgement: { ...judgement, testsTotal: judgement.tests.length }, runnerFailure: null, imageDigest };
}

/** The setup's findings (unsafe names, shadowing files) as hack flags. */
function setupFlags(setup: RunnerResult): HackFlag[] {
  return setup.static.flatMap((finding) => {
    const kind = HackKind.safeParse(finding.kind);
    return kind.success ? [{ kind: kind.data, evidence: `${finding.path} ${finding.evidence}`, path: finding.path, line: finding.line, source: 'static' as const }] : [];
  });
}

export const missingResult = (id: string, why: string): TestResult => ({ id, outcome: 'missing', durationMs: 0, message: why.slice(0, 500) });

/**
 * Turns a grading run into a verdict: what is the same for every graded kind (the setup's flags, a setup that
 * failed), then the kind's own judgement. `expected` are the ids the check is judged on.
 */
export async function judgeGradedRun<C extends Check>(spec: GradedKindSpec<C>, check: C, setup: RunnerResult, run: GradeRun | null, expected: readonly string[], screened: readonly HackFlag[], hidden: FileTree): Promise<GradedJudgement> {
  const hacks = [...screened, ...setupFlags(setup)];
  const verdict: Verdict = (tests, failure, detail, fraction, passed) => {
    const testsPassed = tests.filter((t) => t.outcome === 'passed').length;
    const ok = passed ?? (failure === null && tests.length > 0 && testsPassed === tests.length);
    return { tests, testsPassed, fraction: fraction ?? (tests.length ? testsPassed / tests.length : 0), failure, hacks, passed: ok && hacks.length === 0, detail };
  };
  if (setup.setupError !== undefined || run === null) {
    const why = `the grading sandbox could not be set up: ${setup.setupError ?? 'no run'}`;
    return verdict(expected.map((id) => missingResult(id, why)), 'crash', why);
  }
  const exec = run.exec;
  const ended = exec === null || exec.status === 'exited' ? null : exec.status;
  return spec.judge(check, { run, exec, ended, expected, hidden, verdict });
}

const READ_BACK_LIMIT = 16 * 1024 * 1024;

/** A file the check produced, read back; undefined when it is not there, a problem when it cannot be read. */
export async function readBack(sandbox: Sandbox, path: string, dir?: string): Promise<ReadBack | undefined> {
  try {
    return { text: await sandbox.readFile(path, dir, { maxBytes: READ_BACK_LIMIT }) };
  } catch (error) {
    if (!(error instanceof WorkspaceFileError)) throw error;
    // A file that is not there is not produced; any other refusal (a directory, too large, not UTF-8) says why.
    return error.reason === 'missing' ? undefined : { problem: `${path} could not be read: ${error.message}` };
  }
}

/** How the command ended, in words, with its stderr tail. */
export function commandEnd(exec: ExecResult): string {
  const status = exec.status === 'timeout' ? 'timed out' : exec.status === 'oom' ? 'was killed for memory' : `exited with status ${String(exec.exitCode)}`;
  return withOutput(`the command ${status}`, exec.stderr.split('\n').filter(Boolean).slice(-3).join(' | ').slice(-600));
}
