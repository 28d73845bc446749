import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

/**
 * Who made a sandbox: `<host>:<pid>:<start>:<pool>`. The process start time (clock ticks since boot, from
 * /proc) tells a live owner from a recycled pid; the pool id tells two pools of one process apart.
 * Labels written before the start time was recorded (`<host>:<pid>:<token>`) still parse.
 */
export interface Owner {
  readonly host: string;
  readonly pid: number;
  readonly startTicks: string | null;
  readonly pool: string;
}

/** Field 22 of /proc/<pid>/stat, or null when there is no such process (or no /proc). */
export function processStartTicks(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

export function newOwner(): string {
  return [hostname(), process.pid, processStartTicks(process.pid) ?? '0', randomUUID().slice(0, 8)].join(':');
}

export function parseOwner(label: string): Owner | null {
  const parts = label.split(':');
  const pid = Number(parts[1]);
  if (parts.length < 3 || parts.length > 4 || !parts[0] || !Number.isInteger(pid) || pid <= 0) return null;
  if (parts.length === 3) return { host: parts[0], pid, startTicks: null, pool: parts[2] ?? '' };
  return { host: parts[0], pid, startTicks: parts[2] ?? null, pool: parts[3] ?? '' };
}

/**
 * `gone` when the owner ran on this host and that process no longer exists; `unknown` for other hosts
 * (a shared engine) and unreadable labels, which only `gc --all` touches.
 */
export function ownerState(label: string, localHost: string = hostname()): 'alive' | 'gone' | 'unknown' {
  const owner = parseOwner(label);
  if (owner === null || owner.host !== localHost) return 'unknown';
  const start = processStartTicks(owner.pid);
  if (start === null) return 'gone';
  return owner.startTicks === null || owner.startTicks === '0' || owner.startTicks === start ? 'alive' : 'gone';
}
