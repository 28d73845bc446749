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
}

export function parsePytestOutput(output: string, exitCode: number | null, modulePath: string): TestRunSummary {
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
  };
}
