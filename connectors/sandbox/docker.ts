import { randomUUID } from 'node:crypto';
import { PassThrough, type Duplex } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import Docker from 'dockerode';
import { ConfigError, errorMessage, resolveRetryOptions, SandboxError, Semaphore, wholeNumber, withRetries } from '../../schemas/index.js';
import { AgentChannel } from './agent-channel.js';
import type { SandboxHandle } from './agent-sandbox.js';
import { CappedBuffer } from './output.js';
import { newOwner, ownerState } from './owner.js';
import { AgentSandboxPool, resolvePoolOptions, type PoolOptions, type ReapReport, type SandboxBackend, type StartSpec } from './pool.js';
import { WORKSPACE } from './types.js';

export interface DockerPoolOptions extends PoolOptions {
  /** Engine connection. @default dockerode's defaults (env DOCKER_HOST, else /var/run/docker.sock) */
  docker?: Docker;
  /** Label value that marks containers as this pool's, for the reaper. @default `<host>:<pid>:<process start>:<random>` */
  owner?: string;
  /** User the sandbox runs as. @default '1000:1000' */
  user?: string;
  /** Engine calls (create, start, remove) in flight at once; the engine slows down past a handful. @default 4 */
  engineConcurrency?: number;
  /** How long a new container's agent may take to say it is ready. @default 30000 */
  startTimeoutMs?: number;
}

export const LABELS = {
  owner: 'trialrun.owner',
  runId: 'trialrun.run-id',
  taskId: 'trialrun.task-id',
  createdAt: 'trialrun.created-at',
} as const;

/** Image label holding the agent's command line as a JSON array (set by the python-repair Dockerfile). */
export const AGENT_LABEL = 'trialrun.sandbox-agent';

/** How long a ping may take before the engine counts as unreachable. */
const PING_TIMEOUT_MS = 5_000;

/** Own containers that are not live are only reaped past this age: one may still be starting. */
const STARTING_GRACE_MS = 120_000;

/**
 * Removing a container while the engine restarts: 15 retries from 250 ms doubling to 5 s, jittered as every retry
 * is, wait 29 to 58 s in all (43 s expected), the window the 12 unjittered retries of before gave (43 s).
 */
const REMOVE_RETRY = resolveRetryOptions({ retries: 15, initialDelayMs: 250, maxDelayMs: 5_000 });

interface ImageInfo {
  readonly digest: string;
  readonly agent: readonly string[];
  /** The image's declared volumes (Dockerfile VOLUME) other than /workspace and /tmp. */
  readonly volumes: readonly string[];
}

const statusOf = (error: unknown): number | undefined => (error as { statusCode?: unknown } | null)?.statusCode as number | undefined;
/** The engine has no such container (by status, not by a "404" that a container id or name may contain). */
const isGone = (error: unknown): boolean => statusOf(error) === 404 || /no such container/i.test(errorMessage(error));
/** Another removal of the container is under way: it is not gone yet, and that removal may still fail. */
const isRemovalInProgress = (error: unknown): boolean => /removal of container .* is already in progress/i.test(errorMessage(error));
/** The engine did not answer at all (stopped or restarting), as opposed to refusing a request. */
const isUnreachable = (error: unknown): boolean => /ECONNREFUSED|ENOENT|ECONNRESET|EPIPE|socket hang up/i.test(errorMessage(error));

class DockerBackend implements SandboxBackend {
  private readonly images = new Map<string, Promise<ImageInfo>>();
  private readonly engine: Semaphore;

  constructor(
    private readonly docker: Docker,
    readonly owner: string,
    private readonly user: string,
    engineConcurrency: number,
    private readonly startTimeoutMs: number,
  ) {
    this.engine = new Semaphore(engineConcurrency);
  }

  async start(spec: StartSpec): Promise<SandboxHandle> {
    const image = await this.imageInfo(spec.image);
    const { limits } = spec;
    const suffix = randomUUID().slice(0, 12);
    const name = containerName(spec.taskId, suffix);
    const container = await this.engine.run(async () => {
      let created: Docker.Container;
      try {
        created = await this.docker.createContainer({
          name,
          Image: spec.image,
          // The agent is PID 1: it reaps zombies, and signals from inside the sandbox cannot kill it.
          Entrypoint: [...image.agent],
          Cmd: [],
          User: this.user,
          WorkingDir: WORKSPACE,
          OpenStdin: true,
          StdinOnce: false,
          AttachStdin: true,
          AttachStdout: true,
          AttachStderr: true,
          Tty: false,
          // The agent ignores SIGTERM (see agent.py), so an engine shutdown should not wait the default 10 s.
          StopTimeout: 1,
          NetworkDisabled: true,
          Labels: {
            [LABELS.owner]: this.owner,
            [LABELS.runId]: spec.runId,
            [LABELS.taskId]: spec.taskId,
            [LABELS.createdAt]: new Date().toISOString(),
          },
          HostConfig: {
            NetworkMode: 'none',
            ReadonlyRootfs: true,
            CapDrop: ['ALL'],
            SecurityOpt: ['no-new-privileges'],
            Init: false,
            // Answers travel over the attach stream; a log driver would only copy them to disk.
            LogConfig: { Type: 'none', Config: {} },
            Memory: limits.memoryBytes,
            MemorySwap: limits.memoryBytes,
            NanoCpus: Math.round(limits.cpus * 1e9),
            PidsLimit: limits.pids,
            Ulimits: [
              { Name: 'nofile', Soft: limits.openFiles, Hard: limits.openFiles },
              { Name: 'fsize', Soft: limits.fileSizeBytes, Hard: limits.fileSizeBytes },
            ],
            Tmpfs: {
              // nr_inodes: a flood of empty files ends in ENOSPC, not in the OOM killer (their inodes cost memory).
              [WORKSPACE]: `rw,nosuid,nodev,size=${limits.workspaceBytes},nr_inodes=${limits.workspaceInodes},uid=1000,gid=1000,mode=0755`,
              '/tmp': `rw,nosuid,nodev,size=${limits.tmpBytes},nr_inodes=${limits.tmpInodes},mode=1777`,
              // A volume the image declares (the ops image's Harbor /logs and /tests) is a place it expects to
              // write over a read-only root; an anonymous volume would be unsized engine disk, so each is a tmpfs
              // sized like /tmp (a tmpfs at a volume's path takes the volume's place).
              ...Object.fromEntries(image.volumes.map((path) => [path, `rw,nosuid,nodev,size=${limits.tmpBytes},nr_inodes=${limits.tmpInodes},mode=1777`])),
            },
          },
        });
      } catch (error) {
        // The engine may have made the container although its answer was lost (a reset connection): nothing
        // would know its id, so it is removed by its name.
        if (statusOf(error) !== 409) await this.docker.getContainer(name).remove({ force: true, v: true }).catch(() => undefined);
        throw new SandboxError(`creating a sandbox from ${spec.image} failed: ${errorMessage(error)}`, { retriable: true, cause: error });
      }
      return created;
    });

    const agentErrors = new CappedBuffer(4096);
    let channel: AgentChannel | undefined;
    try {
      // Attached before start, so the agent's first line cannot be missed.
      const stream = (await container.attach({ stream: true, stdin: true, stdout: true, stderr: true, hijack: true })) as Duplex;
      const answers = new PassThrough();
      const errors = new PassThrough().on('data', (chunk: Buffer) => agentErrors.push(chunk));
      this.docker.modem.demuxStream(stream, answers, errors);
      stream.on('end', () => answers.end());
      stream.on('close', () => answers.end());
      stream.on('error', (error: Error) => answers.destroy(error));
      channel = new AgentChannel(stream, answers, name);
      await this.engine.run(() => container.start());
      await withTimeout(channel.ready, this.startTimeoutMs, `its agent did not start within ${this.startTimeoutMs} ms`);
    } catch (error) {
      channel?.close('it failed to start');
      const left = await this.remove(container).then(
        () => '',
        (cleanup: unknown) => `; removing it failed too: ${errorMessage(cleanup)}`,
      );
      const detail = agentErrors.toString().trim();
      throw new SandboxError(`starting sandbox ${name} from ${spec.image} failed: ${errorMessage(error)}${detail ? `; agent said: ${detail}` : ''}${left}`, {
        retriable: true,
        cause: error,
      });
    }

    const ready = channel;
    // A rename must never overlap the container's removal: the engine (20.10) does not serialise the two, and a
    // rename that writes the container's config while a forced removal deletes its directory leaves the container
    // listed after the removal, as "Removal In Progress" (the removal failed) or as a ghost no removal can reach.
    // So renames run one at a time, none starts once removal was asked for, and removal waits for the one in flight.
    let removing = false;
    let renamed: Promise<void> = Promise.resolve();
    return {
      id: container.id,
      imageDigest: image.digest,
      channel: ready,
      assign: (taskId) => {
        if (taskId === spec.taskId) return Promise.resolve();
        const rename = renamed.then(() =>
          this.engine.run(async () => {
            // Released while waiting for its turn: nothing left to label.
            if (!removing) await container.rename({ name: containerName(taskId, suffix) });
          }),
        );
        renamed = rename.catch(() => undefined);
        return rename.catch((error: unknown) => {
          if (!isGone(error)) throw error;
        });
      },
      diagnose: async () => ((await container.inspect()).State?.OOMKilled ? 'oom' : null),
      destroy: async () => {
        removing = true;
        ready.close('it was released');
        await renamed;
        await this.remove(container);
      },
    };
  }

  async reap(live: ReadonlySet<string>): Promise<ReapReport> {
    return reapContainers(this.docker, (info) => {
      const owner = info.Labels[LABELS.owner] ?? '';
      if (owner === this.owner) {
        const ageMs = Date.now() - info.Created * 1000;
        return !live.has(info.Id) && ageMs > STARTING_GRACE_MS ? 'remove' : 'keep';
      }
      const state = ownerState(owner);
      return state === 'gone' ? 'remove' : state === 'unknown' ? 'unknown' : 'keep';
    }, this.engine);
  }

  async existing(): Promise<string[]> {
    return dockerSandboxesOf(this.docker, this.owner);
  }

  /** A ping within PING_TIMEOUT_MS: a dead engine's socket refuses at once, a wedged one is as good as dead. */
  async reachable(): Promise<boolean> {
    return withTimeout(this.docker.ping(), PING_TIMEOUT_MS, 'the engine did not answer a ping').then(
      () => true,
      () => false,
    );
  }

  async removeAll(): Promise<string[]> {
    const left = await this.existing();
    await Promise.all(left.map((id) => this.remove(this.docker.getContainer(id))));
    return left;
  }

  /**
   * Force-removes a container and returns once the engine no longer has it. While the engine is unreachable
   * (restarting) or another removal of it is under way, keeps trying for about 45 s (REMOVE_RETRY); an engine
   * failure (5xx) is retried 3 times.
   */
  private async remove(container: Docker.Container): Promise<void> {
    const retryIf = (error: unknown, attempt: number): boolean => isUnreachable(error) || isRemovalInProgress(error) || ((statusOf(error) ?? 0) >= 500 && attempt < 3);
    try {
      await withRetries(
        async () => {
          try {
            await this.engine.run(() => container.remove({ force: true, v: true }));
          } catch (error) {
            if (!isGone(error)) throw error;
          }
        },
        REMOVE_RETRY,
        new AbortController().signal,
        retryIf,
      );
    } catch (error) {
      throw new SandboxError(`removing sandbox ${container.id.slice(0, 12)} failed: ${errorMessage(error)}`, { retriable: true, cause: error });
    }
  }

  private imageInfo(image: string): Promise<ImageInfo> {
    let info = this.images.get(image);
    if (!info) {
      info = this.docker
        .getImage(image)
        .inspect()
        .then(
          (inspected) => ({
            digest: inspected.Id,
            agent: agentCommand(image, inspected.Config?.Labels ?? {}),
            volumes: Object.keys(inspected.Config?.Volumes ?? {}).filter((path) => path !== WORKSPACE && path !== '/tmp'),
          }),
          (error: unknown) => {
            throw new SandboxError(`sandbox image ${image} is not available: ${errorMessage(error)} (run \`trialrun stack up\` to build it)`, {
              retriable: isUnreachable(error),
              cause: error,
            });
          },
        );
      info.catch(() => this.images.delete(image));
      this.images.set(image, info);
    }
    return info;
  }
}

/** The agent command line from an image's labels; an image without one cannot host a sandbox. */
export function agentCommand(image: string, labels: Readonly<Record<string, string>>): string[] {
  const raw = labels[AGENT_LABEL];
  const hint = 'sandbox images COPY sandbox-images/python-repair/agent/ and name it in that label (see docs/sandbox.md)';
  if (raw === undefined) throw new ConfigError(`image ${image} has no ${AGENT_LABEL} label, so it has no sandbox agent; ${hint}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = null;
  }
  if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((part) => typeof part === 'string' && part !== '')) {
    throw new ConfigError(`image ${image} has a ${AGENT_LABEL} label that is not a JSON array of strings: ${raw}; ${hint}`);
  }
  return parsed as string[];
}

/** `trialrun-<task>-<suffix>`: the task is readable in `docker ps` (engine names allow [a-zA-Z0-9_.-]). */
function containerName(taskId: string, suffix: string): string {
  const task = taskId.replace(/[^a-zA-Z0-9_.-]+/g, '-').replace(/^[-_.]+/, '').slice(0, 64);
  return `trialrun-${task ? `${task}-` : 'warm-'}${suffix}`;
}

async function withTimeout<T>(work: Promise<T>, timeoutMs: number, message: string): Promise<T> {
  const timer = new AbortController();
  try {
    return await Promise.race([
      work,
      sleep(timeoutMs, undefined, { signal: timer.signal }).then(() => {
        throw new SandboxError(message, { retriable: true });
      }),
    ]);
  } finally {
    timer.abort();
  }
}

type ReapDecision = 'remove' | 'keep' | 'unknown';

async function reapContainers(docker: Docker, decide: (info: Docker.ContainerInfo) => ReapDecision, engine = new Semaphore(4)): Promise<ReapReport> {
  const containers = await docker.listContainers({ all: true, filters: { label: [LABELS.owner] } });
  const removed: string[] = [];
  const unknownOwner: string[] = [];
  await Promise.all(
    containers.map(async (info) => {
      const decision = decide(info);
      if (decision === 'unknown') unknownOwner.push(info.Id);
      if (decision !== 'remove') return;
      try {
        await engine.run(() => docker.getContainer(info.Id).remove({ force: true, v: true }));
        removed.push(info.Id);
      } catch (error) {
        // Being removed by someone else (its own pool, another reaper) is as good as removed here.
        if (!isGone(error) && !isRemovalInProgress(error)) throw error;
      }
    }),
  );
  return { removed, unknownOwner };
}

/** Ids of the sandbox containers `owner` made that still exist, running or not. */
export async function dockerSandboxesOf(docker: Docker, owner: string): Promise<string[]> {
  const containers = await docker.listContainers({ all: true, filters: { label: [`${LABELS.owner}=${owner}`] } });
  return containers.map((c) => c.Id);
}

/**
 * Removes trialrun sandbox containers whose executor is gone (`trialrun sandbox gc`); with `all`, every
 * trialrun sandbox container, including those of executors still running.
 */
export function reapDockerSandboxes(docker: Docker = new Docker(), options: { all?: boolean } = {}): Promise<ReapReport> {
  return reapContainers(docker, (info) => {
    if (options.all) return 'remove';
    const state = ownerState(info.Labels[LABELS.owner] ?? '');
    return state === 'gone' ? 'remove' : state === 'unknown' ? 'unknown' : 'keep';
  });
}

/**
 * Sandboxes as Docker containers: no network, read-only root, all capabilities dropped, no-new-privileges,
 * non-root, CPU/memory (no swap)/pids/open-file/file-size limits, sized tmpfs workspace and /tmp, the agent as
 * PID 1. Warm containers wait per (image, run, limits); a released one is removed and replaced in the background.
 */
export class DockerSandboxPool extends AgentSandboxPool {
  constructor(options: DockerPoolOptions = {}) {
    const resolved = resolvePoolOptions(options, 'DockerPoolOptions');
    const engineConcurrency = wholeNumber('DockerPoolOptions.engineConcurrency', options.engineConcurrency ?? 4, { min: 1 });
    const startTimeoutMs = options.startTimeoutMs ?? 30_000;
    if (!Number.isFinite(startTimeoutMs) || startTimeoutMs < 1000) throw new ConfigError(`DockerPoolOptions.startTimeoutMs must be at least 1000, got ${startTimeoutMs}`);
    const user = options.user ?? '1000:1000';
    if (!/^\d+(:\d+)?$/.test(user)) throw new ConfigError(`DockerPoolOptions.user must be numeric uid[:gid], got ${user}`);
    const owner = options.owner ?? newOwner();
    super(new DockerBackend(options.docker ?? new Docker(), owner, user, engineConcurrency, startTimeoutMs), resolved);
  }
}
