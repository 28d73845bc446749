import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Docker from 'dockerode';
import { ConfigError, SandboxError } from '../schemas/index.js';
import type { StackComponent, StackLog } from './component.js';
import { daemonFiles, runCommand, startDaemon, stopDaemon, waitUntil } from './process.js';
import { ensureDir, setupLogFile, stackPaths } from './state.js';

const DEFAULT_HOST = 'unix:///var/run/docker.sock';

export interface DockerOptions {
  /**
   * Engine address; when given (here or in the env) we only ever connect, never start an engine.
   * @default env DOCKER_HOST, else `unix:///var/run/docker.sock`
   */
  host?: string;
  /** Holds our dockerd's pid file (`run/dockerd.pid`) and log (`logs/dockerd.log`). @default `stackPaths().stateDir` */
  stateDir?: string;
  /** dockerd's image and container store; shared by all checkouts, so images outlive a clone. @default `/var/lib/docker` */
  dataRoot?: string;
  /** dockerd's storage driver. @default probed: `overlay2` when the kernel mounts an overlay on `dataRoot`, else `vfs` */
  storageDriver?: 'overlay2' | 'vfs';
  /** How long to wait for a freshly started dockerd to answer. @default 60000 */
  startTimeoutMs?: number;
}

/**
 * A dockerode client for `host` (`unix://` or plain `tcp://`); without one, dockerode's own DOCKER_HOST
 * handling applies, which also covers TLS certificates and `ssh://`.
 */
export function dockerClient(host?: string): Docker {
  if (host === undefined) return new Docker();
  if (host.startsWith('unix://')) return new Docker({ socketPath: host.slice('unix://'.length) });
  const url = new URL(host.includes('://') ? host : `tcp://${host}`);
  return new Docker({ host: url.hostname, port: url.port, protocol: 'http' });
}

/** True when the engine answers `/_ping` within `timeoutMs`. */
export async function pingDocker(docker: Docker, timeoutMs = 5_000): Promise<boolean> {
  // dockerode's typings take no abort signal for ping, and a wedged socket would otherwise hang forever.
  const timeout = sleep(timeoutMs, false, { ref: false });
  const ping = docker.ping().then(
    () => true,
    () => false,
  );
  return Promise.race([ping, timeout]);
}

/** The Docker engine: reused when it answers, otherwise (root + apt only) installed from Debian and started by us. */
export function dockerComponent(options: DockerOptions = {}): StackComponent {
  const explicitHost = options.host ?? process.env.DOCKER_HOST;
  const host = explicitHost ?? DEFAULT_HOST;
  const docker = dockerClient(options.host ?? (process.env.DOCKER_HOST === undefined ? DEFAULT_HOST : undefined));
  const stateDir = options.stateDir ?? stackPaths().stateDir;
  const dataRoot = options.dataRoot ?? '/var/lib/docker';
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;

  const isUp = (): Promise<boolean> => pingDocker(docker);

  return {
    name: 'docker',
    endpoint: () => host,
    isUp,

    async ensure(log) {
      if (await isUp()) return 'reused';
      if (explicitHost !== undefined) {
        throw new ConfigError(
          `no Docker engine answers at ${explicitHost} ` +
            `(set via ${options.host === undefined ? 'DOCKER_HOST' : 'options.host'}); ` +
            'start it yourself, or unset DOCKER_HOST to let trialrun run its own dockerd',
        );
      }
      let dockerd = findExecutable('dockerd');
      const hint = 'Install and start Docker yourself (and join its group), or set DOCKER_HOST.';
      requireRoot('start a Docker engine', hint, { apt: dockerd === undefined });
      if (dockerd === undefined) {
        log("dockerd not found: installing Debian's docker.io package");
        await aptInstall(['docker.io'], setupLogFile(stateDir, 'docker'), log);
        // On a systemd host the package starts its own service; use that rather than a second daemon.
        if (await isUp()) return 'started';
        dockerd = findExecutable('dockerd') ?? 'dockerd';
      }

      const storageDriver = options.storageDriver ?? probeStorageDriver(dataRoot, log);
      const args = [
        `--host=${host}`,
        `--data-root=${dataRoot}`,
        `--storage-driver=${storageDriver}`,
        // Sandboxes run with network none, so dockerd needs no bridge, NAT rules or forwarding sysctl.
        '--bridge=none',
        '--iptables=false',
        '--ip-forward=false',
      ];
      log(`starting dockerd ${args.join(' ')} (log: ${daemonFiles(stateDir, 'dockerd').logFile})`);
      const { logFile, pid } = await startDaemon(stateDir, { name: 'dockerd', command: dockerd, args });
      await waitUntil(isUp, { what: `dockerd at ${host}`, timeoutMs: startTimeoutMs, logFile, pid });
      log(`dockerd is up (pid ${pid}, storage driver ${storageDriver})`);
      return 'started';
    },

    async stop(log) {
      // dockerd gives running containers their stop timeout (10 s) before it exits itself.
      if ((await stopDaemon(stateDir, 'dockerd', { match: 'dockerd', graceMs: 30_000 })) === 'stopped') {
        log('stopped dockerd');
        return 'stopped';
      }
      return (await isUp()) ? 'not-ours' : 'not-running';
    },
  };
}

/**
 * overlay2 is much faster and smaller than vfs (which copies every layer in full), but only works when the
 * kernel can mount an overlay whose upper layer lives on the data root's file system. That fails when the
 * data root is itself on overlayfs (the usual case when this machine is a container) and on some network or
 * FUSE file systems, so we try a real mount there instead of guessing from /proc/filesystems.
 */
export function probeStorageDriver(dataRoot: string, log: StackLog): 'overlay2' | 'vfs' {
  const probe = mkdtempSync(join(ensureDir(dataRoot), 'overlay-probe-'));
  try {
    for (const dir of ['lower', 'upper', 'work', 'merged']) ensureDir(probe, dir);
    const layers = `lowerdir=${probe}/lower,upperdir=${probe}/upper,workdir=${probe}/work`;
    const mount = spawnSync('mount', ['-t', 'overlay', 'overlay', '-o', layers, `${probe}/merged`], { encoding: 'utf8' });
    if (mount.status === 0) {
      spawnSync('umount', [`${probe}/merged`]);
      log(`storage driver overlay2: an overlay mount on ${dataRoot} works`);
      return 'overlay2';
    }
    log(`storage driver vfs: an overlay mount on ${dataRoot} failed (${mount.stderr.trim() || `exit ${mount.status}`})`);
    return 'vfs';
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

/** Throws unless we run as root (and, with `apt`, can install Debian packages); `hint` says what to do instead. */
export function requireRoot(purpose: string, hint: string, needs: { apt: boolean }): void {
  const missing = [
    process.getuid?.() === 0 ? undefined : 'root privileges',
    needs.apt && findExecutable('apt-get') === undefined ? 'apt-get' : undefined,
  ].filter((m) => m !== undefined);
  if (missing.length > 0) {
    throw new SandboxError(`cannot ${purpose}: needs ${missing.join(' and ')}. ${hint}`);
  }
}

/**
 * `apt-get install` without prompts, its output appended to `logFile`; refreshes the package lists once if
 * the first try fails (e.g. none yet). A failure names the log and ends with its last lines.
 */
export async function aptInstall(packages: readonly string[], logFile: string, log: StackLog): Promise<void> {
  // Never let apt, dpkg or debconf stop for a prompt that nobody will answer.
  const options = { logFile, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } };
  const install = ['install', '-y', '--no-install-recommends', ...packages];
  try {
    await runCommand('apt-get', install, options);
  } catch {
    log(`apt-get install ${packages.join(' ')} failed; refreshing the package lists and trying once more`);
    await runCommand('apt-get', ['update'], options);
    await runCommand('apt-get', install, options);
  }
}

/** Looks `name` up on PATH and in the sbin folders, which a non-login root shell may lack. */
export function findExecutable(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/local/sbin', '/usr/sbin', '/sbin'];
  return dirs.filter((dir) => dir !== '').map((dir) => join(dir, name)).find((path) => existsSync(path));
}
