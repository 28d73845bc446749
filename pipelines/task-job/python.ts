import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, errorMessage } from '../../schemas/index.js';

/**
 * The helper scripts in `pipelines/task-job/python/`, found from this file whether it runs compiled
 * (dist/pipelines/task-job) or from source (tsx): the first folder above with a package.json is the checkout.
 */
export function helperScript(name: string): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const candidate = join(dir, 'pipelines', 'task-job', 'python', name);
    if (existsSync(join(dir, 'package.json')) && existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new ConfigError(`helper script pipelines/task-job/python/${name} not found above ${fileURLToPath(import.meta.url)}`);
  }
}

export const helperSource = (name: string): string => readFileSync(helperScript(name), 'utf8');

/**
 * Runs a helper with the host's python3, JSON Lines in and out (one answer per request, in order). Used for
 * work that only parses Python (never runs it), so it needs no sandbox.
 */
export async function runHelperLines<Q, A>(name: string, requests: readonly Q[]): Promise<A[]> {
  if (requests.length === 0) return [];
  const child = spawn('python3', [helperScript(name)], { stdio: ['pipe', 'pipe', 'pipe'] });
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
  const exited = new Promise<number>((resolve, reject) => {
    child.on('error', (error) => reject(new ConfigError(`cannot run python3 for ${name} (the task job needs Python 3 on the host): ${errorMessage(error)}`, { cause: error })));
    child.on('close', (code) => resolve(code ?? -1));
  });
  child.stdin.on('error', () => undefined); // a crashed helper is reported through its exit code
  for (const request of requests) child.stdin.write(`${JSON.stringify(request)}\n`);
  child.stdin.end();
  const code = await exited;
  if (code !== 0) throw new ConfigError(`${name} failed with exit code ${code}: ${Buffer.concat(stderr).toString('utf8').trim().slice(-2000)}`);
  const answers = Buffer.concat(stdout)
    .toString('utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as A);
  if (answers.length !== requests.length) throw new ConfigError(`${name} answered ${answers.length} of ${requests.length} requests`);
  return answers;
}
