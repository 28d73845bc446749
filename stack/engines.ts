import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { ConfigError, wholeNumber } from '../schemas/index.js';
import type { StackComponent, StackLog } from './component.js';
import { dockerClient, findExecutable, pingDocker, probeStorageDriver, requireRoot } from './docker.js';
import { imagesComponent } from './images.js';
import { daemonFiles, isPidAlive, startDaemon, stopDaemon, waitUntil } from './process.js';
import { ensureDir, stackPaths } from './state.js';

/** The most engines `stack up --engines N` runs on one machine. */
export const MAX_ENGINES = 4;

export interface ExtraEngineOptions {
  /** Which engine: 2 and up (1 is the stack's own engine, `dockerComponent`). */
  index: number;
  /** Holds the engine's socket, data root, pid file and log. @default `stackPaths().stateDir` */
  stateDir?: string;
  /** How long to wait for the engine to answer after starting it. @default 60000 */
  startTimeoutMs?: number;
}

/** Where engine `index` lives: its own socket, data root, exec root (short: containerd's sockets go there) and pid file. */
export function enginePaths(index: number, stateDir: string = stackPaths().stateDir): { host: string; dataRoot: string; execRoot: string; pidFile: string; daemon: string } {
  const root = join(stateDir, 'engines', String(index));
  // Unix socket paths are limited to 108 bytes; the exec root holds containerd's, so it sits under /run, named by the state folder.
  const tag = createHash('sha256').update(stateDir).digest('hex').slice(0, 8);
  return { host: `unix://${join(root, 'docker.sock')}`, dataRoot: join(root, 'data'), execRoot: `/run/trialrun-${tag}-engine-${index}`, pidFile: join(root, 'dockerd.pid'), daemon: `dockerd-${index}` };
}

/**
 * A further Docker engine on this machine, standing for another host (`stack up --engines N` starts engines
 * 2..N): its own dockerd with its own socket, data root, exec root (and so its own containerd) and pid file,
 * without a bridge or iptables rules, so it cannot disturb the stack's engine. Processes use it through
 * DOCKER_HOST (`endpoint()`).
 */
export function extraEngineComponent(options: ExtraEngineOptions): StackComponent {
  wholeNumber('ExtraEngineOptions.index', options.index, { min: 2, max: MAX_ENGINES });
  const stateDir = options.stateDir ?? stackPaths().stateDir;
  const paths = enginePaths(options.index, stateDir);
  const docker = dockerClient(paths.host);
  const isUp = (): Promise<boolean> => pingDocker(docker);
  return {
    name: `docker-${options.index}`,
    endpoint: () => paths.host,
    isUp,
    async ensure(log) {
      if (await isUp()) return 'reused';
      const dockerd = findExecutable('dockerd');
      requireRoot('start another Docker engine', 'Run stack up --engines as root on a machine with dockerd (trialrun stack up installs it).', { apt: false });
      if (dockerd === undefined) throw new ConfigError('another Docker engine needs dockerd; run trialrun stack up first, which installs it');
      // An engine killed without a goodbye leaves its own pid file (dockerd refuses to start over one), and may
      // leave its containerd running.
      const stale = existsSync(paths.pidFile) ? Number(readFileSync(paths.pidFile, 'utf8').trim()) : undefined;
      if (stale === undefined || !isPidAlive(stale, 'dockerd')) {
        rmSync(paths.pidFile, { force: true });
        await stopOrphanedContainerd(paths.execRoot, log);
      }
      const storageDriver = probeStorageDriver(ensureDir(paths.dataRoot), log);
      const args = [
        `--host=${paths.host}`,
        `--data-root=${paths.dataRoot}`,
        `--exec-root=${paths.execRoot}`,
        `--pidfile=${paths.pidFile}`,
        `--storage-driver=${storageDriver}`,
        '--bridge=none',
        '--iptables=false',
        '--ip6tables=false',
        '--ip-forward=false',
      ];
      log(`starting ${paths.daemon}: dockerd ${args.join(' ')} (log: ${daemonFiles(stateDir, paths.daemon).logFile})`);
      const { logFile, pid } = await startDaemon(stateDir, { name: paths.daemon, command: dockerd, args });
      await waitUntil(isUp, { what: `${paths.daemon} at ${paths.host}`, timeoutMs: options.startTimeoutMs ?? 60_000, logFile, pid });
      log(`${paths.daemon} is up (pid ${pid}, storage driver ${storageDriver})`);
      return 'started';
    },
    async stop(log) {
      if ((await stopDaemon(stateDir, paths.daemon, { match: 'dockerd', graceMs: 30_000 })) === 'stopped') {
        log(`stopped ${paths.daemon}`);
        return 'stopped';
      }
      return (await isUp()) ? 'not-ours' : 'not-running';
    },
  };
}

/** Engines 2..count, each followed by the sandbox images copied into it from `primary` (the stack's engine). */
export function extraEngineComponents(count: number, primary: Docker = dockerClient(), stateDir: string = stackPaths().stateDir): StackComponent[] {
  wholeNumber('engines', count, { min: 1, max: MAX_ENGINES });
  return Array.from({ length: count - 1 }, (_, i) => i + 2).flatMap((index) => [
    extraEngineComponent({ index, stateDir }),
    imagesComponent({ docker: dockerClient(enginePaths(index, stateDir).host), copyFrom: primary, name: `sandbox-images-${index}` }),
  ]);
}

/**
 * The containerd a killed dockerd started can outlive it (it is not in dockerd's process group). A new dockerd
 * finds its pid file, waits on it ("containerd is still running") and gives up; so it is killed first. Its
 * shims keep the containers, which the new containerd finds again and dockerd then cleans up.
 */
async function stopOrphanedContainerd(execRoot: string, log: StackLog): Promise<void> {
  const pidFile = join(execRoot, 'containerd', 'containerd.pid');
  const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) : undefined;
  if (pid !== undefined && Number.isInteger(pid) && isPidAlive(pid, 'containerd')) {
    log(`killing containerd (pid ${pid}), left running by the engine's killed dockerd`);
    process.kill(pid, 'SIGKILL');
    await waitUntil(async () => !isPidAlive(pid, 'containerd'), { what: `containerd (pid ${pid}) to exit`, timeoutMs: 30_000 });
  }
  rmSync(pidFile, { force: true });
}
