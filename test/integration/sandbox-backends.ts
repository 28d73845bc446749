import { existsSync, readdirSync, readFileSync } from 'node:fs';
import Docker from 'dockerode';
import { DockerSandboxPool, ProcessSandboxPool, type AgentSandboxPool, type PoolOptions } from '../../connectors/sandbox/index.js';
import { imageFor } from '../../stack/index.js';

export { hostProcessesWith, rendezvous, uniqueMarker } from '../fixtures/processes.js';

/** Both sandbox backends, so each suite runs once per backend. */
export const BACKENDS: ReadonlyArray<{ readonly name: 'docker' | 'process'; pool(options?: PoolOptions): AgentSandboxPool }> = [
  { name: 'docker', pool: (options) => new DockerSandboxPool(options) },
  { name: 'process', pool: (options) => new ProcessSandboxPool(options) },
];

export const sandboxImage = (): string => imageFor('python-repair');

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
