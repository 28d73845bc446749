import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SandboxError, errorMessage, resolveRetryOptions, withRetries } from '../../schemas/index.js';
import type { ResolvedSandboxLimits } from './types.js';

/**
 * Per-sandbox cgroups for the process backend: memory (no swap), pids and CPU limits plus an OOM-kill counter,
 * at `<hierarchy>/trialrun/<owner key>/<sandbox id>`. Needs root and a writable cgroup file system (v1 with the
 * memory, pids and cpu controllers mounted, or v2 with them available).
 */
export type CgroupLayout = { readonly version: 1; readonly mounts: Readonly<Record<Controller, string>> } | { readonly version: 2; readonly root: string };

type Controller = 'memory' | 'pids' | 'cpu';
const CONTROLLERS: readonly Controller[] = ['memory', 'pids', 'cpu'];
const CGROUP_ROOT = '/sys/fs/cgroup';
const TOP = 'trialrun';
const CFS_PERIOD_US = 100_000;

/** The cgroup hierarchy we can manage, or null (not root, or the controllers are missing or read-only). */
export function detectCgroups(root: string = CGROUP_ROOT): CgroupLayout | null {
  if (process.getuid?.() !== 0) return null;
  try {
    if (existsSync(join(root, 'cgroup.controllers'))) {
      const available = readFileSync(join(root, 'cgroup.controllers'), 'utf8').split(/\s+/);
      if (!CONTROLLERS.every((c) => available.includes(c))) return null;
      mkdirSync(join(root, TOP), { recursive: true });
      return { version: 2, root };
    }
    const mounts = Object.fromEntries(CONTROLLERS.map((c) => [c, join(root, c)])) as Record<Controller, string>;
    if (!CONTROLLERS.every((c) => existsSync(join(mounts[c], 'cgroup.procs')))) return null;
    for (const c of CONTROLLERS) mkdirSync(join(mounts[c], TOP), { recursive: true });
    return { version: 1, mounts };
  } catch {
    return null;
  }
}

function write(path: string, value: string): void {
  try {
    writeFileSync(path, value);
  } catch (error) {
    throw new SandboxError(`writing ${value} to ${path} failed: ${errorMessage(error)}`, { cause: error });
  }
}

export class SandboxCgroup {
  private constructor(
    private readonly layout: CgroupLayout,
    /** One directory per hierarchy (v1) or the single one (v2). */
    private readonly dirs: readonly string[],
  ) {}

  static create(layout: CgroupLayout, ownerKey: string, id: string, limits: ResolvedSandboxLimits): SandboxCgroup {
    const quota = String(Math.max(1000, Math.round(limits.cpus * CFS_PERIOD_US)));
    if (layout.version === 2) {
      const owner = join(layout.root, TOP, ownerKey);
      const dir = join(owner, id);
      mkdirSync(dir, { recursive: true });
      // Children only get a controller that every ancestor delegates to them.
      for (const parent of [layout.root, join(layout.root, TOP), owner]) write(join(parent, 'cgroup.subtree_control'), CONTROLLERS.map((c) => `+${c}`).join(' '));
      const cgroup = new SandboxCgroup(layout, [dir]);
      write(join(dir, 'memory.max'), String(limits.memoryBytes));
      if (existsSync(join(dir, 'memory.swap.max'))) write(join(dir, 'memory.swap.max'), '0');
      write(join(dir, 'pids.max'), String(limits.pids));
      write(join(dir, 'cpu.max'), `${quota} ${CFS_PERIOD_US}`);
      return cgroup;
    }
    const dirs = Object.fromEntries(CONTROLLERS.map((c) => [c, join(layout.mounts[c], TOP, ownerKey, id)])) as Record<Controller, string>;
    for (const dir of Object.values(dirs)) mkdirSync(dir, { recursive: true });
    const cgroup = new SandboxCgroup(layout, Object.values(dirs));
    write(join(dirs.memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
    // memsw (memory + swap) only exists with swap accounting; equal to the memory limit it means no swap.
    if (existsSync(join(dirs.memory, 'memory.memsw.limit_in_bytes'))) write(join(dirs.memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
    write(join(dirs.pids, 'pids.max'), String(limits.pids));
    write(join(dirs.cpu, 'cpu.cfs_period_us'), String(CFS_PERIOD_US));
    write(join(dirs.cpu, 'cpu.cfs_quota_us'), quota);
    return cgroup;
  }

  /** The `cgroup.procs` files a process writes its pid to in order to join. */
  get procsFiles(): string[] {
    return this.dirs.map((dir) => join(dir, 'cgroup.procs'));
  }

  /** The directory holding the OOM counter file, and that file's name, for the agent inside to read. */
  get oomCounter(): { dir: string; file: string } {
    return this.layout.version === 2 ? { dir: this.dirs[0]!, file: 'memory.events' } : { dir: this.dirs[0]!, file: 'memory.oom_control' };
  }

  oomKills(): number {
    const { dir, file } = this.oomCounter;
    try {
      const match = /^oom_kill (\d+)$/m.exec(readFileSync(join(dir, file), 'utf8'));
      return match ? Number(match[1]) : 0;
    } catch {
      return 0;
    }
  }

  /** SIGKILLs every process in the cgroup until it is empty, then removes it. */
  async destroy(): Promise<void> {
    await killCgroup(this.dirs);
    await removeDirs(this.dirs);
  }
}

function members(dir: string): number[] {
  try {
    return readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

async function killCgroup(dirs: readonly string[]): Promise<void> {
  const kill = dirs.map((dir) => join(dir, 'cgroup.kill')).find((file) => existsSync(file));
  for (let sweep = 0; sweep < 500; sweep++) {
    const pids = [...new Set(dirs.flatMap(members))];
    if (pids.length === 0) return;
    if (kill) writeFileSync(kill, '1');
    else
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    await sleep(10);
  }
  throw new SandboxError(`processes in ${dirs[0]} survived 500 SIGKILL sweeps`);
}

/** A cgroup stays busy for a moment after its last process died (it must be reaped first): up to 100 retries of 10-20 ms. */
const BUSY_RETRY = resolveRetryOptions({ retries: 100, initialDelayMs: 20, maxDelayMs: 20, factor: 1 });

async function removeDirs(dirs: readonly string[]): Promise<void> {
  const code = (error: unknown): string | undefined => (error as NodeJS.ErrnoException).code;
  for (const dir of dirs) {
    try {
      await withRetries(
        async () => {
          try {
            rmdirSync(dir);
          } catch (error) {
            if (code(error) !== 'ENOENT') throw error;
          }
        },
        BUSY_RETRY,
        new AbortController().signal,
        (error) => code(error) === 'EBUSY',
      );
    } catch (error) {
      throw new SandboxError(`removing cgroup ${dir} failed: ${errorMessage(error)}`, { cause: error });
    }
  }
}

/** The sandbox cgroups under one owner folder. */
export function sandboxCgroupsOf(layout: CgroupLayout, ownerKey: string): string[] {
  const top = layout.version === 2 ? join(layout.root, TOP) : join(layout.mounts.memory, TOP);
  return safeList(join(top, ownerKey));
}

/** `decide(ownerKey, sandboxId, ageMs)` per sandbox cgroup; those it returns true for are killed and removed. */
export async function reapCgroups(layout: CgroupLayout, decide: (ownerKey: string, sandboxId: string, ageMs: number) => boolean): Promise<string[]> {
  const tops = layout.version === 2 ? [join(layout.root, TOP)] : CONTROLLERS.map((c) => join(layout.mounts[c], TOP));
  const removed: string[] = [];
  const primary = tops[0]!;
  for (const ownerKey of safeList(primary)) {
    const sandboxes = safeList(join(primary, ownerKey));
    for (const id of sandboxes) {
      let ageMs = 0;
      try {
        ageMs = Date.now() - statSync(join(primary, ownerKey, id)).mtimeMs;
      } catch {
        continue;
      }
      if (!decide(ownerKey, id, ageMs)) continue;
      const dirs = tops.map((top) => join(top, ownerKey, id));
      await killCgroup(dirs);
      await removeDirs(dirs);
      removed.push(id);
    }
    // An owner folder is removed once empty; a live owner recreates it with its next sandbox.
    if (safeList(join(primary, ownerKey)).length === 0) {
      for (const top of tops) {
        try {
          rmdirSync(join(top, ownerKey));
        } catch {
          // not empty or busy: a sandbox is starting there
        }
      }
    }
  }
  return removed;
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
  } catch {
    return [];
  }
}
