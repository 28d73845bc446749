import type { OutputVerification } from '../../../../schemas/index.js';
import { checkId, decideOutputChecks, type ReadBack } from '../../output-checks.js';
import { commandEnd, gradedKind, readBack } from '../graded.js';

const STDOUT_LIMIT = 4 * 1024 * 1024;

/**
 * `output`: optionally runs a command (the agent's script), then checks what it produced, one judged id per
 * check (see output-checks.ts). An expected file a check compares with is read on the host only.
 */
export const OUTPUT_KIND = gradedKind<OutputVerification>({
  name: 'output',
  owns: (check): check is OutputVerification => check.kind === 'output',
  ids: (check) => check.checks.map(checkId),
  hostOnlyFiles: (check) => new Set(check.checks.flatMap((c) => ('expectedFile' in c && c.expectedFile !== undefined ? [c.expectedFile] : []))),
  async run(sandbox, check, timeoutMs, signal) {
    const exec = check.command ? await sandbox.exec(check.command, { timeoutMs, maxOutputBytes: STDOUT_LIMIT, signal }) : null;
    const targets = new Map<string, ReadBack>();
    for (const c of check.checks) {
      if (c.stdout) {
        targets.set('stdout', exec === null ? { problem: 'the check reads stdout, and the spec runs no command' } : exec.truncated ? { problem: `stdout was over ${STDOUT_LIMIT} bytes and was cut` } : { text: exec.stdout });
      } else if (!targets.has(c.path!)) {
        targets.set(c.path!, (await readBack(sandbox, c.path!)) ?? { problem: `${c.path} was not produced` });
      }
    }
    return { exec, targets };
  },
  async judge(check, { run, exec, ended, hidden, verdict }) {
    const tests = await decideOutputChecks(check.checks, (target) => run.targets!.get(target) ?? { problem: `${target} was not read back` }, hidden);
    if (exec !== null && (ended !== null || exec.exitCode !== 0)) return verdict(tests, ended ?? 'crash', commandEnd(exec), undefined, false);
    return verdict(tests, null, null);
  },
});
