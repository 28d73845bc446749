/**
 * Helpers for the daemons `trialrun stack up` starts itself (the Kafka broker, the schema registry,
 * dockerd): each runs detached in its own session so it outlives the CLI, writes to
 * `<stateDir>/logs/<name>.log`, and is remembered by `<stateDir>/run/<name>.pid`. That pid file is
 * the only proof that this project started the daemon, so `stopDaemon` never touches anything else.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureDir } from './state.js';

export interface DaemonFiles {
  /** `<stateDir>/run/<name>.pid` */
  readonly pidFile: string;
  /** `<stateDir>/logs/<name>.log` */
  readonly logFile: string;
}

export function daemonFiles(stateDir: string, name: string): DaemonFiles {
  return {
    pidFile: join(stateDir, 'run', `${name}.pid`),
    logFile: join(stateDir, 'logs', `${name}.log`),
  };
}

export interface DaemonSpec {
  /** Names the pid and log files; unique per state folder. */
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  /** @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  /** @default process.cwd() */
  readonly cwd?: string;
}

export interface StartedDaemon extends DaemonFiles {
  readonly pid: number;
}

/**
 * Starts `spec` as the leader of a new session and process group (so it survives the CLI and
 * `stopDaemon` can signal its children too), appending stdout and stderr to its log file, and
 * records its pid. Spawn failures such as a missing binary are thrown here rather than left to a
 * later timeout.
 */
export async function startDaemon(stateDir: string, spec: DaemonSpec): Promise<StartedDaemon> {
  const files = daemonFiles(stateDir, spec.name);
  ensureDir(stateDir, 'run');
  ensureDir(stateDir, 'logs');
  const out = openSync(files.logFile, 'a');
  try {
    writeFileSync(out, `\n--- ${new Date().toISOString()} starting: ${spec.command} ${spec.args.join(' ')}\n`);
    const child = spawn(spec.command, spec.args, {
      detached: true,
      stdio: ['ignore', out, out],
      env: spec.env ?? process.env,
      cwd: spec.cwd ?? process.cwd(),
    });
    const pid = await new Promise<number>((resolvePid, reject) => {
      child.once('error', (err) => reject(new Error(`cannot start ${spec.name} (${spec.command}): ${err.message}`)));
      child.once('spawn', () =>
        child.pid === undefined ? reject(new Error(`cannot start ${spec.name}: no pid`)) : resolvePid(child.pid),
      );
    });
    child.unref();
    writeFileSync(files.pidFile, `${pid}\n`);
    return { ...files, pid };
  } finally {
    // The child holds its own copy of the descriptor.
    closeSync(out);
  }
}

export interface CommandOptions {
  /** Output goes here (appended) rather than to the terminal; the error names it. */
  readonly logFile: string;
  /** @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  /** @default process.cwd() */
  readonly cwd?: string;
}

/**
 * Runs a one-shot setup command (a download, a storage format) to completion with its output
 * appended to `logFile`; throws, quoting the log's tail, unless it exits 0.
 */
export async function runCommand(command: string, args: readonly string[], options: CommandOptions): Promise<void> {
  ensureDir(dirname(options.logFile));
  const out = openSync(options.logFile, 'a');
  let code: number | null;
  try {
    writeFileSync(out, `\n--- ${new Date().toISOString()} running: ${command} ${args.join(' ')}\n`);
    const child = spawn(command, args, {
      stdio: ['ignore', out, out],
      env: options.env ?? process.env,
      cwd: options.cwd ?? process.cwd(),
    });
    code = await new Promise<number | null>((resolveCode, reject) => {
      child.once('error', (err) => reject(new Error(`cannot run ${command}: ${err.message}`)));
      child.once('exit', (exitCode) => resolveCode(exitCode));
    });
  } finally {
    closeSync(out);
  }
  if (code !== 0) throw new Error(`${command} ${args.join(' ')} failed (exit ${code})${logHint(options.logFile)}`);
}

/** The pid recorded for `name`, if its pid file exists and holds a number. */
export function readPid(stateDir: string, name: string): number | undefined {
  const { pidFile } = daemonFiles(stateDir, name);
  if (!existsSync(pidFile)) return undefined;
  const pid = Number.parseInt(readFileSync(pidFile, 'utf8').trim(), 10);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/**
 * True while `pid` runs. A zombie (exited, not yet reaped by a parent that is still alive) counts as
 * gone. With `match`, the process must also have `match` in its command line (read from /proc where
 * there is one), so a pid that the OS has since reused for something else is not mistaken for ours.
 */
export function isPidAlive(pid: number, match?: string): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    // ESRCH: gone. EPERM: another user's process, so not the daemon we started.
    return false;
  }
  const proc = `/proc/${pid}`;
  if (!existsSync(proc)) return true;
  try {
    // Field 3 of /proc/<pid>/stat is the state; the command name before it is parenthesised.
    const stat = readFileSync(join(proc, 'stat'), 'utf8');
    if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return false;
    return match === undefined || readFileSync(join(proc, 'cmdline'), 'utf8').includes(match);
  } catch {
    return false; // exited between the checks
  }
}

/** The pid of our running daemon `name`, or undefined (stale pid files are removed). */
export function runningDaemon(stateDir: string, name: string, match?: string): number | undefined {
  const pid = readPid(stateDir, name);
  if (pid === undefined) return undefined;
  if (isPidAlive(pid, match)) return pid;
  rmSync(daemonFiles(stateDir, name).pidFile, { force: true });
  return undefined;
}

export interface StopOptions {
  /** Command-line fragment the process must show to be ours (see `isPidAlive`). @default undefined (pid file alone) */
  readonly match?: string;
  /** How long to wait after SIGTERM before SIGKILL. @default 20_000 */
  readonly graceMs?: number;
}

/**
 * Stops the daemon recorded in `<stateDir>/run/<name>.pid`: SIGTERM to its process group, then
 * SIGKILL after `graceMs`. Without a live pid file it does nothing and says 'not-running'; whether
 * something else answers on the daemon's port is for the caller to tell ('not-ours').
 */
export async function stopDaemon(
  stateDir: string,
  name: string,
  options: StopOptions = {},
): Promise<'stopped' | 'not-running'> {
  const pid = runningDaemon(stateDir, name, options.match);
  if (pid === undefined) return 'not-running';
  signalGroup(pid, 'SIGTERM');
  const deadline = Date.now() + (options.graceMs ?? 20_000);
  while (isPidAlive(pid) && Date.now() < deadline) await sleep(200);
  if (isPidAlive(pid)) {
    signalGroup(pid, 'SIGKILL');
    while (isPidAlive(pid)) await sleep(100);
  }
  rmSync(daemonFiles(stateDir, name).pidFile, { force: true });
  return 'stopped';
}

/** The status a shell reports for a child that ended: its exit code, or 128 + the number of the signal that ended it. */
const exitStatus = (code: number | null, signal: NodeJS.Signals | null): number => code ?? 128 + (signal ? constants.signals[signal] : 0);

const hasExited = (child: ChildProcess): boolean => child.exitCode !== null || child.signalCode !== null;

/** Resolves with the child's exit status once it has exited; at once for a child that already has. */
export function childExit(child: ChildProcess): Promise<number> {
  if (hasExited(child)) return Promise.resolve(exitStatus(child.exitCode, child.signalCode));
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve(exitStatus(code, signal))));
}

export interface StopChildOptions {
  /** How long to wait after SIGTERM before SIGKILL. @default 20_000 */
  readonly graceMs?: number;
  /** Signal the child's whole process group (a child spawned detached leads its own), so its own children go too. @default false */
  readonly group?: boolean;
}

/**
 * Stops a child this process spawned: SIGTERM, then SIGKILL if it is still running `graceMs` later, so a child
 * stuck where it never reads the flag SIGTERM sets cannot hold its parent up for ever. Resolves with its exit
 * status (143 when SIGTERM ended it, 137 when it had to be killed); at once for a child that already exited.
 */
export async function stopChild(child: ChildProcess, options: StopChildOptions = {}): Promise<number> {
  if (hasExited(child)) return childExit(child);
  const exit = childExit(child);
  const send = (signal: NodeJS.Signals): void => (options.group === true && child.pid !== undefined ? signalGroup(child.pid, signal) : void child.kill(signal));
  send('SIGTERM');
  const deadline = setTimeout(() => send('SIGKILL'), options.graceMs ?? 20_000);
  try {
    return await exit;
  } finally {
    clearTimeout(deadline);
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal); // the daemon leads its own group (detached spawn)
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

export interface WaitOptions {
  /** What is awaited, for the error message, e.g. 'Kafka at localhost:9092'. */
  readonly what: string;
  /** @default 60_000 */
  readonly timeoutMs?: number;
  /** Pause between probes. @default 500 */
  readonly intervalMs?: number;
  /** The daemon's log, named (with its last lines) in the error. @default undefined */
  readonly logFile?: string;
  /** Give up at once when this process exits, instead of waiting out the timeout. @default undefined */
  readonly pid?: number;
}

/**
 * Polls `probe` until it resolves true. Throws when the deadline passes or the watched process
 * exits, naming the log file and quoting its tail so the cause is visible without opening it.
 */
export async function waitUntil(probe: () => Promise<boolean>, options: WaitOptions): Promise<void> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    if (await probe().catch(() => false)) return;
    if (options.pid !== undefined && !isPidAlive(options.pid)) {
      throw new Error(`${options.what}: the process (pid ${options.pid}) exited before it was ready${logHint(options.logFile)}`);
    }
    if (Date.now() >= deadline) {
      throw new Error(`${options.what}: not ready after ${Math.round((options.timeoutMs ?? 60_000) / 1000)}s${logHint(options.logFile)}`);
    }
    await sleep(options.intervalMs ?? 500);
  }
}

/** "; see <file>, which ends with: <its last lines>", for an error about a command whose output went there. */
export function logHint(logFile: string | undefined): string {
  if (logFile === undefined) return '';
  let tail = '';
  try {
    tail = readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-15).join('\n');
  } catch {
    // no log yet
  }
  return `; see ${logFile}${tail ? `, which ends with:\n${tail}` : ''}`;
}

/** True when a TCP connection to host:port is accepted within `timeoutMs`. */
export function portAccepts(host: string, port: number, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolveOpen) => {
    const socket = connect({ host, port });
    const done = (open: boolean): void => {
      socket.destroy();
      resolveOpen(open);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** A TCP port on 127.0.0.1 that nothing listens on now (the kernel's pick), for a server of a test's or bench's own. */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** True when GET `url` answers with `status` within `timeoutMs`. */
export async function httpAnswers(url: string, status = 200, timeoutMs = 2_000): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
    return res.status === status;
  } catch {
    return false;
  }
}

/** Waits until host:port accepts TCP connections (see `waitUntil` for the failure modes). */
export function waitForPort(host: string, port: number, options: WaitOptions): Promise<void> {
  return waitUntil(() => portAccepts(host, port), options);
}

export interface HttpWaitOptions extends WaitOptions {
  /** The status that means ready. @default 200 */
  readonly status?: number;
}

/** Waits until GET `url` answers `status` (see `waitUntil` for the failure modes). */
export function waitForHttp(url: string, options: HttpWaitOptions): Promise<void> {
  return waitUntil(() => httpAnswers(url, options.status ?? 200), options);
}
