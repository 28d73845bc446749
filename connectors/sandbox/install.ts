import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { SandboxError, errorMessage } from '../../schemas/index.js';

const run = promisify(execFile);

/** `name` on PATH or in the sbin folders a non-login root shell may lack. */
export function findProgram(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/local/sbin', '/usr/sbin', '/sbin', '/usr/bin', '/bin'];
  return dirs.filter((dir) => dir !== '').map((dir) => join(dir, name)).find((path) => existsSync(path));
}

/**
 * The path of `program`, installing Debian's `pkg` first when it is missing and we are root with apt-get (the
 * same way `trialrun stack up` installs docker.io); otherwise an error that says what to install.
 */
export async function ensureDebianProgram(program: string, pkg: string, purpose: string, log: (line: string) => void): Promise<string> {
  const found = findProgram(program);
  if (found) return found;
  if (process.getuid?.() !== 0 || !findProgram('apt-get')) {
    throw new SandboxError(`${purpose} needs ${program}: install Debian's ${pkg} package (apt-get install ${pkg}) or run once as root`);
  }
  log(`${program} not found: installing Debian's ${pkg} package`);
  const apt = (args: string[]) => run('apt-get', args, { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, maxBuffer: 16 * 1024 * 1024 });
  const install = ['install', '-y', '--no-install-recommends', pkg];
  try {
    await apt(install).catch(async () => {
      // The package lists may be missing or stale on a fresh machine.
      await apt(['update']);
      await apt(install);
    });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? '';
    throw new SandboxError(`apt-get install ${pkg} failed: ${errorMessage(error)} ${stderr.slice(-2000)}`, { cause: error });
  }
  const installed = findProgram(program);
  if (!installed) throw new SandboxError(`apt-get installed ${pkg} but no ${program} is on PATH`);
  log(`installed ${installed}`);
  return installed;
}

/** bwrap, for the process backend (Debian's bubblewrap package). */
export const ensureBubblewrap = (log: (line: string) => void): Promise<string> => ensureDebianProgram('bwrap', 'bubblewrap', 'the process sandbox backend', log);
