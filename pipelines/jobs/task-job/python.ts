import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkoutFile, ConfigError, errorMessage } from '../../../schemas/index.js';

/** The helper scripts in `pipelines/jobs/task-job/python/`. */
export const helperScript = (name: string): string => checkoutFile(join('pipelines', 'jobs', 'task-job', 'python', name));

export const helperSource = (name: string): string => readFileSync(helperScript(name), 'utf8');

export interface HelperOptions<Q, A> {
  /**
   * The answer for a request the helper died on (a crash, an out-of-memory kill): with it, the helper is
   * started again on the requests after that one, so one pathological row costs only its own answer.
   * @default none: a helper that dies fails the whole call
   */
  onCrash?: (request: Q, reason: string) => A;
}

/**
 * Runs a helper with the host's python3, JSON Lines in and out (one answer per request, in order, each
 * flushed as it is written, so the answers before a crash are kept). Used for work that only parses Python
 * (never runs it), so it needs no sandbox.
 */
export async function runHelperLines<Q, A>(name: string, requests: readonly Q[], options: HelperOptions<Q, A> = {}): Promise<A[]> {
  const answers: A[] = [];
  while (answers.length < requests.length) {
    const rest = requests.slice(answers.length);
    const run = await runHelperOnce<A>(name, rest);
    answers.push(...run.answers);
    if (run.failure === null) {
      if (run.answers.length !== rest.length) throw new ConfigError(`${name} answered ${answers.length} of ${requests.length} requests`);
      break;
    }
    if (!options.onCrash || run.answers.length >= rest.length) throw new ConfigError(`${name} ${run.failure.status}: ${run.failure.stderr}`);
    const lastLine = run.failure.stderr.split('\n').at(-1)!.slice(0, 300);
    answers.push(options.onCrash(rest[run.answers.length]!, `the helper ${name} ${run.failure.status} on it${lastLine ? ` (${lastLine})` : ''}`));
  }
  return answers;
}

async function runHelperOnce<A>(name: string, requests: readonly unknown[]): Promise<{ answers: A[]; failure: { status: string; stderr: string } | null }> {
  // Serialised before the helper starts: a request that cannot be written must not leave a helper waiting for the rest.
  const input = requests.map((request) => `${JSON.stringify(request)}\n`);
  const child = spawn('python3', [helperScript(name)], { stdio: ['pipe', 'pipe', 'pipe'] });
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.on('error', (error) => reject(new ConfigError(`cannot run python3 for ${name} (the task job needs Python 3 on the host): ${errorMessage(error)}`, { cause: error })));
    child.on('close', (code, signal) => resolve({ code, signal }));
  });
  child.stdin.on('error', () => undefined); // a crashed helper is reported through its exit status
  for (const line of input) child.stdin.write(line);
  child.stdin.end();
  const { code, signal } = await exited;
  const text = Buffer.concat(stdout).toString('utf8');
  // Only whole lines are answers: a crash may cut the last one short.
  const lines = text.slice(0, text.lastIndexOf('\n') + 1).split('\n').filter((line) => line.trim());
  const answers = lines.map((line) => JSON.parse(line) as A);
  if (code === 0) return { answers, failure: null };
  const status = signal ? `was killed by ${signal}` : `failed with exit code ${code}`;
  return { answers, failure: { status, stderr: Buffer.concat(stderr).toString('utf8').trim().slice(-2000) } };
}
