import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import Docker from 'dockerode';
import { DockerSandboxPool, ProcessSandboxPool, type AgentSandboxPool, type PoolOptions } from '../../connectors/sandbox/index.js';
import { imageFor } from '../../stack/index.js';

/** Both sandbox backends, so each suite runs once per backend. */
export const BACKENDS: ReadonlyArray<{ readonly name: 'docker' | 'process'; pool(options?: PoolOptions): AgentSandboxPool }> = [
  { name: 'docker', pool: (options) => new DockerSandboxPool(options) },
  { name: 'process', pool: (options) => new ProcessSandboxPool(options) },
];

export const sandboxImage = (): string => imageFor('python-repair');

/** A number no other process uses as an argument, to find a sandbox's processes from the host. */
export const uniqueMarker = (): string => `${1000 + Math.floor(Math.random() * 8000)}.${randomUUID().replace(/\D/g, '').slice(0, 8)}`;

/**
 * A shell script for command `n` of `count` meeting under `tag`: it marks itself started, waits until all
 * `count` have, then prints `n`. Commands run one after another would wait forever (until their timeout).
 */
export function rendezvous(tag: string, n: number, count: number): string {
  const dir = `/tmp/rendezvous-${tag}`;
  return `mkdir -p ${dir} && touch ${dir}/${n} && while [ "$(ls ${dir} | wc -l)" -lt ${count} ]; do sleep 0.05; done; echo ${n}`;
}

/** Host pids whose command line contains `text` (NUL-separated arguments). */
export function hostProcessesWith(text: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(text)) found.push(Number(name));
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

/** Kills a sandbox the way a crash or an engine restart would: every process in it, from the host. */
export async function killFromOutside(backend: 'docker' | 'process', id: string): Promise<void> {
  if (backend === 'docker') {
    await new Docker().getContainer(id).kill();
    return;
  }
  // cgroup v1 keeps our sandboxes under the pids hierarchy, v2 under the unified one.
  const tops = ['/sys/fs/cgroup/pids/trialrun', '/sys/fs/cgroup/trialrun'].filter((top) => existsSync(top));
  const procs = tops.flatMap((top) => readdirSync(top).map((owner) => `${top}/${owner}/${id}/cgroup.procs`)).find((file) => existsSync(file));
  if (!procs) throw new Error(`no cgroup for process sandbox ${id}`);
  for (const pid of readFileSync(procs, 'utf8').split('\n').filter(Boolean)) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // already dead: killing its parent (bwrap) took it down
    }
  }
}
