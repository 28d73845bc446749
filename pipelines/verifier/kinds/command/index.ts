import type { TestResult, TestsVerification, VerifyFailure } from '../../../../schemas/index.js';
import { parseJunit } from '../../junit.js';
import { commandEnd, gradedKind, missingResult, readBack } from '../graded.js';

/** A `tests` check run by any command that writes JUnit XML (jest/vitest with a JUnit reporter, unittest, go test, ...). */
export type CommandCheck = TestsVerification & { runner: 'command' };

/**
 * `tests` with runner `command`: the command runs once, its JUnit report is read back from `junitPath` and each
 * listed id (`classname::name`) must be in it and pass; without lists, every test the report holds must pass,
 * and there must be one.
 */
export const COMMAND_KIND = gradedKind<CommandCheck>({
  name: 'command',
  owns: (check): check is CommandCheck => check.kind === 'tests' && check.runner === 'command',
  problem(check) {
    const absent = [check.command === undefined ? '`command`' : null, check.junitPath === undefined ? '`junitPath`' : null].filter(Boolean);
    return absent.length ? `its tests check with runner 'command' has no ${absent.join(' and no ')}` : null;
  },
  ids: (check) => [...new Set([...check.failToPass, ...check.passToPass])],
  admitFiles(check, screened) {
    // The report's path is the command's alone: a file or a symlink of the agent's there (or on the way) could stand in for it.
    const report = check.junitPath!;
    const inTheWay = (path: string): boolean => path === report || report.startsWith(`${path}/`);
    const links = screened.symlinks.filter((link) => inTheWay(Buffer.from(link.path, 'base64').toString('utf8')));
    if (!(report in screened.files) && links.length === 0) return { agent: screened, flags: [] };
    const { [report]: _forged, ...files } = screened.files;
    return {
      agent: { ...screened, files, symlinks: screened.symlinks.filter((link) => !links.includes(link)) },
      flags: [{ kind: 'fake-report', evidence: `the final files hold ${links.length ? 'a symlink at or above ' : ''}${report}, where the test command writes its JUnit report`, path: report, line: null, source: 'files' }],
    };
  },
  async run(sandbox, check, timeoutMs, signal) {
    const exec = await sandbox.exec(check.command!, { timeoutMs, maxOutputBytes: 256 * 1024, signal });
    const report = (await readBack(sandbox, check.junitPath!)) ?? { problem: `the test command wrote no JUnit report at ${check.junitPath}` };
    return { exec, report };
  },
  judge(_check, { run, exec, ended, expected, verdict }) {
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
  },
});
