import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import Docker from 'dockerode';
import { checkoutFile, ConfigError, SandboxError, errorMessage, withDeadline } from '../../schemas/index.js';
import { AgentChannel } from './agent-channel.js';
import type { SandboxHandle } from './agent-sandbox.js';
import { detectCgroups, reapCgroups, SandboxCgroup, sandboxCgroupsOf, type CgroupLayout } from './cgroups.js';
import { ensureBubblewrap, findProgram } from './install.js';
import { CappedBuffer } from './output.js';
import { newOwner, ownerState, parseOwner } from './owner.js';
import { AgentSandboxPool, resolvePoolOptions, type PoolOptions, type ReapReport, type SandboxBackend, type StartSpec } from './pool.js';
import { defaultRootfsDir, RootfsStore } from './rootfs.js';
import { WORKSPACE, type ResolvedSandboxLimits } from './types.js';

export interface ProcessPoolOptions extends PoolOptions {
  /**
   * Cache of image root file systems (see RootfsStore); the sandbox user must be able to reach it.
   * @default `$TRIALRUN_CACHE_DIR/sandbox-rootfs`, else `/var/cache/trialrun/sandbox-rootfs` for root, else `~/.cache/trialrun/sandbox-rootfs`
   */
  rootfsDir?: string;
  /** Engine that root file systems missing from the cache are exported from; null never asks one. @default a client for DOCKER_HOST or the local socket */
  docker?: Docker | null;
  /** Host uid:gid the sandbox runs as when the executor is root; otherwise the executor's own ids are used. @default '1000:1000' */
  user?: string;
  /** Per-sandbox cgroups for memory, pids and CPU: `auto` uses them when we are root and they are writable. @default 'auto' */
  cgroups?: 'auto' | 'off';
  /** Install Debian's bubblewrap when bwrap is missing (root and apt-get only). @default true */
  installBubblewrap?: boolean;
  /** How long a new sandbox's agent may take to say it is ready. @default 30000 */
  startTimeoutMs?: number;
}

/** Joins the sandbox's cgroups and mounts its sized tmpfs as root before bwrap starts (see the script). */
const PRELUDE_SCRIPT = 'connectors/sandbox/bubblewrap-prelude.sh';
/** Where the agent finds its OOM counter: the sandbox's memory cgroup, bound read-only over the empty /sys. */
const OOM_MOUNT = '/sys';

/** The cgroup folder of an owner: `<pid>-<start>-<pool>` (the host is ours by construction). */
const ownerKey = (owner: string): string => {
  const parsed = parseOwner(owner);
  return parsed ? `${parsed.pid}-${parsed.startTicks ?? '0'}-${parsed.pool}` : owner.replace(/[^a-zA-Z0-9_.-]+/g, '-');
};
const ownerOfKey = (key: string): string => `${hostname()}:${key.split('-').join(':')}`;

class BubblewrapBackend implements SandboxBackend {
  private bwrap: Promise<string> | null = null;
  /** Sandboxes whose bwrap process has not exited yet. */
  private readonly running = new Set<string>();

  constructor(
    readonly owner: string,
    private readonly rootfs: RootfsStore,
    private readonly cgroups: CgroupLayout | null,
    private readonly ids: { uid: number; gid: number; switchUser: boolean },
    private readonly install: boolean,
    private readonly startTimeoutMs: number,
    private readonly warn: (message: string) => void,
  ) {}

  async start(spec: StartSpec): Promise<SandboxHandle> {
    const [bwrap, image] = await Promise.all([this.bubblewrap(), this.rootfs.get(spec.image)]);
    const id = `trialrun-${randomUUID().slice(0, 12)}`;
    let cgroup: SandboxCgroup | null = null;
    try {
      cgroup = this.cgroups ? SandboxCgroup.create(this.cgroups, ownerKey(this.owner), id, spec.limits) : null;
    } catch (error) {
      await reapCgroups(this.cgroups!, (_, sandbox) => sandbox === id).catch(() => undefined);
      throw error;
    }
    // As root, /workspace and /tmp are tmpfs mounted by the prelude, which can cap their inodes (bwrap's own
    // --tmpfs takes only a size); the sandbox binds them. Without root, bwrap's --tmpfs is all there is.
    const mounts = this.ids.switchUser ? tmpfsMounts(image.dir, spec.limits, this.ids, image.volumes) : null;
    const args = bwrapArgs(image.dir, image.env, spec.limits, cgroup, mounts !== null, image.volumes);
    const agent = [...image.agent, `--rlimit-nofile=${spec.limits.openFiles}`, `--rlimit-fsize=${spec.limits.fileSizeBytes}`];
    const sandboxed = [bwrap, ...args, '--', ...agent];
    const switchUser = this.ids.switchUser ? [findProgram('setpriv') ?? 'setpriv', `--reuid=${this.ids.uid}`, `--regid=${this.ids.gid}`, '--clear-groups', '--'] : [];
    const preludeArgs = [...(cgroup?.procsFiles.flatMap((file) => ['cgroup', file]) ?? []), ...(mounts ?? [])];
    const prelude = ['/bin/sh', checkoutFile(PRELUDE_SCRIPT), ...preludeArgs, '--'];
    const unshare = mounts ? [findProgram('unshare') ?? 'unshare', '--mount', '--propagation', 'private', '--'] : [];
    const [command, ...commandArgs] = preludeArgs.length > 0 ? [...unshare, ...prelude, ...switchUser, ...sandboxed] : [...switchUser, ...sandboxed];

    const errors = new CappedBuffer(4096);
    const proc = spawn(command!, commandArgs, { stdio: ['pipe', 'pipe', 'pipe'], env: {} });
    const exited = new Promise<void>((resolve) => proc.on('close', () => resolve()).on('error', () => resolve()));
    this.running.add(id);
    void exited.then(() => this.running.delete(id));
    proc.stderr.on('data', (chunk: Buffer) => errors.push(chunk));
    const channel = new AgentChannel(proc.stdin, proc.stdout, id);
    proc.on('error', (error) => channel.close(`bwrap could not be started: ${error.message}`));
    proc.on('exit', (code, signal) => channel.close(`bwrap exited (${signal ?? `code ${code}`}): ${errors.toString().trim() || 'no message'}`));

    const destroy = async (): Promise<void> => {
      channel.close('it was released');
      proc.kill('SIGKILL');
      await exited;
      await cgroup?.destroy();
    };
    try {
      await withDeadline(channel.ready, this.startTimeoutMs, () => new SandboxError(`its agent did not start within ${this.startTimeoutMs} ms`, { retriable: true }));
    } catch (error) {
      await destroy().catch((cleanup: unknown) => this.warn(`cleaning up sandbox ${id} failed: ${errorMessage(cleanup)}`));
      const detail = errors.toString().trim();
      throw new SandboxError(`starting sandbox ${id} from ${spec.image} failed: ${errorMessage(error)}${detail ? `; bwrap said: ${detail}` : ''}`, {
        retriable: true,
        cause: error,
      });
    }
    return {
      id,
      imageDigest: image.digest,
      channel,
      // No labels to update: the cgroup path names the owner, and a sandbox never outlives its executor.
      assign: async () => undefined,
      diagnose: async () => (cgroup && cgroup.oomKills() > 0 ? 'oom' : null),
      destroy,
    };
  }

  /** Sandboxes die with their executor (bwrap --die-with-parent); what can be left are their cgroups. */
  async reap(live: ReadonlySet<string>): Promise<ReapReport> {
    if (!this.cgroups) return { removed: [], unknownOwner: [] };
    const mine = ownerKey(this.owner);
    const removed = await reapCgroups(this.cgroups, (key, id, ageMs) =>
      key === mine ? !live.has(id) && ageMs > 120_000 : ownerState(ownerOfKey(key)) === 'gone',
    );
    return { removed, unknownOwner: [] };
  }

  async existing(): Promise<string[]> {
    const ids = new Set(this.running);
    if (this.cgroups) for (const id of sandboxCgroupsOf(this.cgroups, ownerKey(this.owner))) ids.add(id);
    return [...ids];
  }

  /** A sandbox's processes all live in its cgroup, so removing this owner's cgroups removes what is left. */
  async removeAll(): Promise<string[]> {
    if (!this.cgroups) return [];
    const mine = ownerKey(this.owner);
    return reapCgroups(this.cgroups, (key) => key === mine);
  }

  /** Sandboxes are processes of this host's own kernel: there is no engine to lose. */
  async reachable(): Promise<boolean> {
    return true;
  }

  private bubblewrap(): Promise<string> {
    if (!this.bwrap) {
      this.bwrap = this.install
        ? ensureBubblewrap((line) => this.warn(line))
        : Promise.resolve(findProgram('bwrap') ?? Promise.reject(new SandboxError("bwrap is missing: install Debian's bubblewrap package")));
      this.bwrap.catch(() => (this.bwrap = null));
    }
    return this.bwrap;
  }
}

/** Ids of the process sandboxes `owner` made whose cgroups still exist (none without cgroups). */
export function processSandboxesOf(owner: string): string[] {
  const layout = detectCgroups();
  return layout ? sandboxCgroupsOf(layout, ownerKey(owner)) : [];
}

/**
 * Kills and removes the cgroups of process sandboxes whose executor is gone (`trialrun sandbox gc`); with
 * `all`, those of running executors too. Without root or writable cgroups there is nothing to remove: the
 * sandboxes themselves die with their executor.
 */
export async function reapProcessSandboxes(options: { all?: boolean } = {}): Promise<ReapReport> {
  const layout = detectCgroups();
  if (!layout) return { removed: [], unknownOwner: [] };
  const removed = await reapCgroups(layout, (key) => options.all === true || ownerState(ownerOfKey(key)) === 'gone');
  return { removed, unknownOwner: [] };
}

/**
 * bubblewrap's arguments: new user, pid, network, IPC, UTS and cgroup namespaces; the image read-only at /;
 * sized tmpfs /workspace and /tmp, and one sized like /tmp on each volume the image declares (the ops image's
 * Harbor /logs and /tests), as the Docker backend mounts them; no capabilities, no further user namespaces; the
 * agent is PID 1 and dies with the executor.
 */
function bwrapArgs(rootfs: string, env: Readonly<Record<string, string>>, limits: ResolvedSandboxLimits, cgroup: SandboxCgroup | null, premounted: boolean, volumes: readonly string[]): string[] {
  const args = [
    '--unshare-user',
    '--unshare-pid',
    '--unshare-net',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--disable-userns',
    '--die-with-parent',
    '--as-pid-1',
    '--new-session',
    '--uid', '1000',
    '--gid', '1000',
    '--hostname', 'sandbox',
    '--ro-bind', rootfs, '/',
    '--proc', '/proc',
    '--dev', '/dev',
    ...(premounted
      ? ['--bind', join(rootfs, WORKSPACE), WORKSPACE, '--bind', join(rootfs, 'tmp'), '/tmp']
      : ['--size', String(limits.workspaceBytes), '--perms', '0755', '--tmpfs', WORKSPACE, '--size', String(limits.tmpBytes), '--perms', '1777', '--tmpfs', '/tmp']),
    ...volumes.flatMap((volume) => (premounted ? ['--bind', join(rootfs, volume), volume] : ['--size', String(limits.tmpBytes), '--perms', '1777', '--tmpfs', volume])),
    '--chdir', WORKSPACE,
    '--cap-drop', 'ALL',
    '--clearenv',
  ];
  for (const [name, value] of Object.entries({ ...env, HOSTNAME: 'sandbox' })) args.push('--setenv', name, value);
  if (cgroup) {
    const { dir, file } = cgroup.oomCounter;
    args.push('--ro-bind', dir, OOM_MOUNT, '--setenv', 'TRIALRUN_AGENT_OOM_FILES', `${OOM_MOUNT}/${file}`);
  }
  return args;
}

/**
 * The prelude's `tmpfs DIR OPTIONS` arguments for /workspace and /tmp, mounted over the image's own folders
 * (in the sandbox's private mount namespace, so other sandboxes of the image never see them), sized and
 * inode-capped, owned by the sandbox user.
 */
function tmpfsMounts(rootfs: string, limits: ResolvedSandboxLimits, ids: { uid: number; gid: number }, volumes: readonly string[]): string[] {
  return [
    'tmpfs', join(rootfs, WORKSPACE), `nosuid,nodev,size=${limits.workspaceBytes},nr_inodes=${limits.workspaceInodes},mode=0755,uid=${ids.uid},gid=${ids.gid}`,
    'tmpfs', join(rootfs, 'tmp'), `nosuid,nodev,size=${limits.tmpBytes},nr_inodes=${limits.tmpInodes},mode=1777`,
    ...volumes.flatMap((volume) => ['tmpfs', join(rootfs, volume), `nosuid,nodev,size=${limits.tmpBytes},nr_inodes=${limits.tmpInodes},mode=1777`]),
  ];
}

/**
 * bwrap runs as the sandbox user, so every folder above the root file systems must let that user through
 * (root's 0700 home does not); checked here so the error names the option rather than a failed bind mount.
 */
function assertReachable(dir: string, ids: { uid: number; gid: number }, what: string): void {
  for (let path = resolve(dir); ; path = dirname(path)) {
    let stat;
    try {
      stat = statSync(path);
    } catch {
      stat = null; // created later, by us, with mode 0755
    }
    if (stat) {
      const bit = stat.uid === ids.uid ? 0o100 : stat.gid === ids.gid ? 0o010 : 0o001;
      if ((stat.mode & bit) === 0) {
        throw new ConfigError(`${what} ${dir} cannot be reached by the sandbox user ${ids.uid}:${ids.gid}: ${path} is mode ${(stat.mode & 0o777).toString(8)}; pick a folder outside it`);
      }
    }
    if (dirname(path) === path) return;
  }
}

function parseUser(user: string): { uid: number; gid: number } {
  const match = /^(\d+):(\d+)$/.exec(user);
  if (!match) throw new ConfigError(`ProcessPoolOptions.user must be numeric uid:gid, got ${user}`);
  return { uid: Number(match[1]), gid: Number(match[2]) };
}

/**
 * Sandboxes as bubblewrap processes over the same root file system as the Docker images, for hosts without a
 * Docker engine. Enforced always: no network, read-only root, no capabilities, no-new-privileges, no nested user
 * namespaces, a private pid namespace with the agent as PID 1, sized tmpfs, open-file and file-size limits. With
 * root and writable cgroups also: memory (no swap, OOM reported), pids and CPU. Never: a seccomp filter.
 */
export class ProcessSandboxPool extends AgentSandboxPool {
  readonly usesCgroups: boolean;

  constructor(options: ProcessPoolOptions = {}) {
    const resolved = resolvePoolOptions(options, 'ProcessPoolOptions');
    const startTimeoutMs = options.startTimeoutMs ?? 30_000;
    if (!Number.isFinite(startTimeoutMs) || startTimeoutMs < 1000) throw new ConfigError(`ProcessPoolOptions.startTimeoutMs must be at least 1000, got ${startTimeoutMs}`);
    if (options.cgroups !== undefined && options.cgroups !== 'auto' && options.cgroups !== 'off') {
      throw new ConfigError(`ProcessPoolOptions.cgroups must be 'auto' or 'off', got ${String(options.cgroups)}`);
    }
    const root = process.getuid?.() === 0;
    const user = parseUser(options.user ?? '1000:1000');
    const ids = root ? { ...user, switchUser: true } : { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0, switchUser: false };
    const owner = newOwner();
    const docker = options.docker === undefined ? new Docker() : options.docker;
    const cgroups = options.cgroups === 'off' ? null : detectCgroups();
    const rootfsDir = options.rootfsDir ?? defaultRootfsDir();
    assertReachable(rootfsDir, ids, 'ProcessPoolOptions.rootfsDir');
    const store = new RootfsStore(rootfsDir, docker, owner);
    super(new BubblewrapBackend(owner, store, cgroups, ids, options.installBubblewrap ?? true, startTimeoutMs, resolved.onWarning), resolved);
    this.usesCgroups = cgroups !== null;
  }
}
