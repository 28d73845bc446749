/** How many failing and passing tests ran one line of the module under repair. */
export interface LineCounts {
  readonly line: number;
  readonly failing: number;
  readonly passing: number;
}

/** The last line the in-sandbox test runner (`trialrun_tests.py`) prints: the module's line spectrum as JSON. */
const SPECTRUM_PREFIX = 'trialrun-spectrum: ';

/** What the policy needs to know from a pytest run, parsed from `-q --tb=short` output. */
export interface TestRunSummary {
  readonly passed: boolean;
  readonly passedCount: number;
  readonly failedCount: number;
  /** Lines of the module under repair that appear in tracebacks. */
  readonly moduleLines: readonly number[];
  /** Identifiers followed by `(` in failing assertion lines: the functions the failing tests call. */
  readonly calledNames: readonly string[];
  /** Exception class of each failing test, in order (`AssertionError` for a failed assert). */
  readonly failureKinds: readonly string[];
  /** The module lines the tests ran, by line, with how many failing and passing tests ran each; empty without a spectrum line. */
  readonly lineSpectrum: readonly LineCounts[];
}

/** The runner's output in one pass: pytest's (what the agent reads) and the spectrum lines it printed. */
function splitSpectrum(runnerOutput: string): { readonly output: string; readonly spectrumLines: readonly string[] } {
  const lines = runnerOutput.split('\n');
  return { output: lines.filter((line) => !line.startsWith(SPECTRUM_PREFIX)).join('\n'), spectrumLines: lines.filter((line) => line.startsWith(SPECTRUM_PREFIX)) };
}

/** pytest's closing tally, `1 failed, 2 passed in 0.03s` (`-q`) or `=== 1 failed in 62.10s (0:01:02) ===`: its duration. */
const TALLY_DURATION = /^(=* ?\d+ (?:passed|failed|errors?|skipped|deselected|xfailed|xpassed|warnings?)\b.*?) in \d+(?:\.\d+)?s(?: \(\d+:\d\d:\d\d\))?( =+)?$/gm;

/**
 * The run's output as the agent reads it: pytest's, without the runner's spectrum line and without the run's
 * duration. The same module and tests then read the same, so a group's episodes share their prompts up to
 * their first choice (the model server reuses a shared prefix instead of evaluating it again) and a replay
 * reads what the original read.
 */
export function observedTestOutput(runnerOutput: string): string {
  return splitSpectrum(runnerOutput).output.replace(TALLY_DURATION, '$1$2');
}

/**
 * The spectrum line's counts, by line. A run that never printed one (killed at its timeout, say) has none; a line
 * that is not the runner's JSON is a run the module broke, not the environment's to crash on: no counts either.
 * The runner prints it last; a test's captured output could hold a line that looks the same.
 */
function parseSpectrum(text: string | undefined): LineCounts[] {
  if (text === undefined) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text.slice(SPECTRUM_PREFIX.length));
  } catch {
    return [];
  }
  const lines = (parsed as { lines?: unknown } | null)?.lines;
  if (typeof lines !== 'object' || lines === null) return [];
  return Object.entries(lines)
    .filter((entry): entry is [string, [number, number]] => Array.isArray(entry[1]) && entry[1].length === 2 && entry[1].every((n) => Number.isInteger(n) && n >= 0))
    .map(([line, [failing, passing]]) => ({ line: Number(line), failing, passing }))
    .filter((counts) => Number.isInteger(counts.line) && counts.line > 0)
    .sort((a, b) => a.line - b.line);
}

export function parsePytestOutput(runnerOutput: string, exitCode: number | null, modulePath: string): TestRunSummary {
  const { output, spectrumLines } = splitSpectrum(runnerOutput);
  const count = (word: string): number => Number(new RegExp(`(\\d+) ${word}`).exec(output)?.[1] ?? 0);
  const failedCount = count('failed') + count('errors?');
  const escaped = modulePath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const moduleLines = [...output.matchAll(new RegExp(`(?:^|[\\s/])${escaped}:(\\d+)`, 'gm'))].map((m) => Number(m[1]));
  const calledNames = new Set<string>();
  for (const line of output.split('\n')) {
    if (!/^\s*(>|E)\s/.test(line)) continue;
    for (const match of line.matchAll(/\b([A-Za-z_]\w*)\s*\(/g)) calledNames.add(match[1]!);
  }
  // pytest's short summary names each failure: `FAILED path::test - IndexError: ...` or `- assert 2 == 4`.
  const failureKinds = [...output.matchAll(/^(?:FAILED|ERROR) [^\s[]+(?:\[.*?\])? - (.*)$/gm)].map(([, reason]) =>
    reason!.startsWith('assert') ? 'AssertionError' : (/^(?:[\w.]+\.)?(\w+):?/.exec(reason!)?.[1] ?? 'unknown'),
  );
  return {
    passed: exitCode === 0 && failedCount === 0,
    passedCount: count('passed'),
    failedCount,
    moduleLines: [...new Set(moduleLines)],
    calledNames: [...calledNames].filter((name) => !['assert', 'len', 'list', 'sorted', 'set', 'dict', 'tuple', 'str', 'int'].includes(name)),
    failureKinds,
    lineSpectrum: parseSpectrum(spectrumLines.at(-1)),
  };
}
