import { randomBytes } from 'node:crypto';
import type { ExecResult, Sandbox } from '../../connectors/sandbox/index.js';
import {
  AGENT_OUTPUT_BOUNDS,
  HackKind,
  parseJsonBounded,
  SandboxError,
  WorkspaceFileError,
  type FileTree,
  type HackFlag,
  type OutputVerification,
  type ScriptVerification,
  type TestResult,
  type TestsVerification,
  type VerifyFailure,
} from '../../schemas/index.js';
import { withOutput, type RunnerResult } from './judge.js';
import { parseJunit } from './junit.js';
import { checkId, decideOutputChecks, type ReadBack } from './output-checks.js';

/**
 * The verification kinds other than the hardened pytest runner: `tests` with any command that writes JUnit XML,
 * `script` (the Harbor reward-file contract) and `output` (checks on produced files or stdout). The grading
 * sandbox is set up by the same trusted runner (its `setup` mode writes the agent's screened files, then the
 * task's pristine files); the check's command then runs as one sandbox exec, whose whole process tree the
 * sandbox's executor kills when it exits or times out; what it produced is read back and judged here.
 */
export type GradedCheck = (TestsVerification & { runner: 'command' }) | ScriptVerification | OutputVerification;

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

/** The files of a check that only the host may read: an output check's expected files stay out of the sandbox. */
export function hostOnlyFiles(check: GradedCheck): Set<string> {
  if (check.kind !== 'output') return new Set();
  return new Set(check.checks.flatMap((c) => ('expectedFile' in c && c.expectedFile !== undefined ? [c.expectedFile] : [])));
}

/** The ids a check is judged on: the listed tests, one entry per output check, or the script's reward. */
export function gradedIds(check: GradedCheck): string[] {
  if (check.kind === 'tests') return [...new Set([...check.failToPass, ...check.passToPass])];
  if (check.kind === 'output') return check.checks.map(checkId);
  return ['reward'];
}

const REPORT_LIMIT = 16 * 1024 * 1024;
const STDOUT_LIMIT = 4 * 1024 * 1024;

async function readBack(sandbox: Sandbox, path: string, dir?: string): Promise<ReadBack | undefined> {
  try {
    return { text: await sandbox.readFile(path, dir, { maxBytes: REPORT_LIMIT }) };
  } catch (error) {
    if (!(error instanceof WorkspaceFileError)) throw error;
    // A file that is not there is not produced; any other refusal (a directory, too large, not UTF-8) says why.
    return error.reason === 'missing' ? undefined : { problem: `${path} could not be read: ${error.message}` };
  }
}

/** Runs a check's command in the set-up grading sandbox and reads back what the check needs. */
export async function runGradedCheck(sandbox: Sandbox, check: GradedCheck, timeoutMs: number, signal: AbortSignal): Promise<GradeRun> {
  const budget = check.timeoutMs ?? timeoutMs;
  switch (check.kind) {
    case 'tests': {
      const exec = await sandbox.exec(check.command!, { timeoutMs: budget, maxOutputBytes: 256 * 1024, signal });
      const report = (await readBack(sandbox, check.junitPath!)) ?? { problem: `the test command wrote no JUnit report at ${check.junitPath}` };
      return { exec, report };
    }
    case 'script': {
      // A folder with a fresh random name, made after the agent's files are written: nothing of theirs can be in it.
      const rewardDir = `/tmp/trialrun-reward-${randomBytes(12).toString('hex')}`;
      const made = await sandbox.exec(['mkdir', '-m', '0777', rewardDir], { timeoutMs: 10_000, signal });
      if (made.status !== 'exited' || made.exitCode !== 0) throw new SandboxError(`the grading sandbox could not make its reward folder: ${made.stderr.slice(-300)}`, { retriable: true });
      const exec = await sandbox.exec(check.command, { timeoutMs: budget, maxOutputBytes: 256 * 1024, env: { TRIALRUN_REWARD_DIR: rewardDir }, signal });
      return { exec, rewardFiles: { txt: await readBack(sandbox, 'reward.txt', rewardDir), json: await readBack(sandbox, 'reward.json', rewardDir) } };
    }
    case 'output': {
      const exec = check.command ? await sandbox.exec(check.command, { timeoutMs: budget, maxOutputBytes: STDOUT_LIMIT, signal }) : null;
      const targets = new Map<string, ReadBack>();
      for (const c of check.checks) {
        if (c.stdout) {
          targets.set('stdout', exec === null ? { problem: 'the check reads stdout, and the spec runs no command' } : exec.truncated ? { problem: `stdout was over ${STDOUT_LIMIT} bytes and was cut` } : { text: exec.stdout });
        } else if (!targets.has(c.path!)) {
          targets.set(c.path!, (await readBack(sandbox, c.path!)) ?? { problem: `${c.path} was not produced` });
        }
      }
      return { exec, targets };
    }
  }
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

/** How the command ended, in words, with its stderr tail. */
function commandEnd(exec: ExecResult): string {
  const status = exec.status === 'timeout' ? 'timed out' : exec.status === 'oom' ? 'was killed for memory' : `exited with status ${String(exec.exitCode)}`;
  return withOutput(`the command ${status}`, exec.stderr.split('\n').filter(Boolean).slice(-3).join(' | ').slice(-600));
}

const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** The reward a script wrote: reward.txt (one number) first, else reward.json (`reward` key); in [0, 1]. */
export function readReward(files: NonNullable<GradeRun['rewardFiles']>): { reward: number; from: string } | { problem: string } {
  const { txt, json } = files;
  if (txt !== undefined) {
    if ('problem' in txt) return txt;
    const text = txt.text.trim();
    if (!NUMBER.test(text)) return { problem: `reward.txt holds ${JSON.stringify(text.slice(0, 80))}, not one number` };
    const reward = Number(text);
    return reward >= 0 && reward <= 1 ? { reward, from: 'reward.txt' } : { problem: `reward.txt holds ${reward}, outside [0, 1]` };
  }
  if (json !== undefined) {
    if ('problem' in json) return json;
    const parsed = parseJsonBounded(json.text, AGENT_OUTPUT_BOUNDS);
    if ('problem' in parsed) return { problem: `reward.json is not JSON we read (${parsed.problem}): ${JSON.stringify(json.text.slice(0, 80))}` };
    const { value } = parsed;
    const reward = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>).reward : undefined;
    if (typeof reward !== 'number' || !Number.isFinite(reward)) return { problem: `reward.json has no numeric "reward" key: ${JSON.stringify(json.text.slice(0, 80))}` };
    return reward >= 0 && reward <= 1 ? { reward, from: 'reward.json' } : { problem: `reward.json's reward is ${reward}, outside [0, 1]` };
  }
  return { problem: 'the verifier script wrote neither reward.txt nor reward.json into $TRIALRUN_REWARD_DIR' };
}

/** The setup's findings (unsafe names, shadowing files) as hack flags. */
function setupFlags(setup: RunnerResult): HackFlag[] {
  return setup.static.flatMap((finding) => {
    const kind = HackKind.safeParse(finding.kind);
    return kind.success ? [{ kind: kind.data, evidence: `${finding.path} ${finding.evidence}`, path: finding.path, line: finding.line, source: 'static' as const }] : [];
  });
}

const missingResult = (id: string, why: string): TestResult => ({ id, outcome: 'missing', durationMs: 0, message: why.slice(0, 500) });

/**
 * Turns a grading run into a verdict. `expected` are the ids the check is judged on (see `gradedIds`); for a
 * test command without listed ids, every test in its report must pass, and there must be at least one.
 */
export async function judgeGraded(check: GradedCheck, setup: RunnerResult, run: GradeRun | null, expected: readonly string[], screened: readonly HackFlag[], hidden: FileTree): Promise<GradedJudgement> {
  const hacks = [...screened, ...setupFlags(setup)];
  const verdict = (tests: TestResult[], failure: VerifyFailure | null, detail: string | null, fraction?: number, passed?: boolean): GradedJudgement => {
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
  switch (check.kind) {
    case 'tests': {
      const report = run.report!;
      const cases = 'text' in report ? parseJunit(report.text, { style: 'generic' }) : null;
      let failure: VerifyFailure | null = ended;
      let detail = ended === null ? null : commandEnd(exec!);
      if (failure === null && cases === null) [failure, detail] = ['no-report', `${'problem' in report ? report.problem : 'the JUnit report is not well-formed JUnit XML'}; ${commandEnd(exec!)}`];
      const reported = new Map((cases ?? []).map((c) => [c.id, c]));
      const notRun = failure === null ? 'not in the report' : `not run (${failure}): ${detail}`;
      const tests: TestResult[] =
        expected.length > 0
          ? expected.map((id) => {
              const c = reported.get(id);
              return c ? { id, outcome: c.outcome, durationMs: c.durationMs, message: c.message } : missingResult(id, notRun);
            })
          : (cases ?? []).map((c) => ({ id: c.id, outcome: c.outcome, durationMs: c.durationMs, message: c.message }));
      if (failure === null && tests.length === 0) [failure, detail] = ['nothing-ran', `the JUnit report lists no tests; ${commandEnd(exec!)}`];
      if (failure === null && expected.length > 0 && !expected.some((id) => reported.has(id))) {
        [failure, detail] = ['nothing-ran', `none of the ${expected.length} listed tests is in the report, which has ${reported.size}: ${[...reported.keys()].slice(0, 5).join(', ')}`];
      }
      return verdict(tests, failure, detail);
    }
    case 'script': {
      const threshold = check.passThreshold ?? 1;
      const read = readReward(run.rewardFiles!);
      if (ended !== null) return verdict([missingResult('reward', commandEnd(exec!))], ended, commandEnd(exec!), 0, false);
      if ('problem' in read) {
        const detail = `${read.problem}; ${commandEnd(exec!)}`;
        return verdict([missingResult('reward', detail)], 'no-report', detail, 0, false);
      }
      const passed = read.reward >= threshold;
      const entry: TestResult = { id: 'reward', outcome: passed ? 'passed' : 'failed', durationMs: exec!.durationMs, message: `reward ${read.reward} from ${read.from} (pass at ${threshold})` };
      return verdict([entry], null, null, read.reward, passed);
    }
    case 'output': {
      const tests = await decideOutputChecks(check.checks, (target) => run.targets!.get(target) ?? { problem: `${target} was not read back` }, hidden);
      if (exec !== null && (ended !== null || exec.exitCode !== 0)) return verdict(tests, ended ?? 'crash', commandEnd(exec), undefined, false);
      return verdict(tests, null, null);
    }
  }
}
