import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { PassThrough } from 'node:stream';
import Docker from 'dockerode';
import { SandboxError, errorMessage, type FileTree } from '../../schemas/index.js';
import { CappedBuffer } from './output.js';
import {
  resolveSandboxLimits,
  type AcquireOptions,
  type ExecOptions,
  type ExecResult,
  type ResolvedSandboxLimits,
  type Sandbox,
  type SandboxPool,
} from './types.js';

export interface DockerPoolOptions {
  /** Engine connection. @default dockerode's defaults (env DOCKER_HOST, else /var/run/docker.sock) */
  docker?: Docker;
  /** Label value that marks containers as this process's, for the reaper. @default `<hostname>:<pid>:<random>` */
  owner?: string;
  /** Default limits for every sandbox; AcquireOptions.limits override them. @default resolveSandboxLimits() */
  limits?: ResolvedSandboxLimits;
  /** User the sandbox runs as. @default '1000:1000' */
  user?: string;
}

export const LABELS = {
  owner: 'trialrun.owner',
  runId: 'trialrun.run-id',
  taskId: 'trialrun.task-id',
  createdAt: 'trialrun.created-at',
} as const;

const WORKSPACE = '/workspace';

// Files cross the container boundary as JSON on stdin/stdout: the root file system is read-only and
// /workspace is a tmpfs, where the engine's archive API cannot write.
const WRITE_FILES = `import json,os,sys
d=json.load(sys.stdin); root=os.path.realpath(d["dir"])
for p,c in d["files"].items():
    f=os.path.realpath(os.path.join(root,p))
    if not f.startswith(root+os.sep): sys.exit("refusing to write outside "+root+": "+p)
    os.makedirs(os.path.dirname(f),exist_ok=True)
    open(f,"w",encoding="utf-8").write(c)`;
const READ_FILES = `import json,os,sys
d=json.load(sys.stdin); root=os.path.realpath(d["dir"]); out={}
for p in d["paths"]:
    f=os.path.realpath(os.path.join(root,p))
    if not f.startswith(root+os.sep): sys.exit("refusing to read outside "+root+": "+p)
    out[p]=open(f,encoding="utf-8",errors="replace").read()
json.dump(out,sys.stdout)`;
// cgroup v2 exposes memory.events, v1 memory.oom_control; both count OOM kills in the container's cgroup.
const OOM_KILLS = `for f in /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control; do [ -r $f ] && sed -n 's/^oom_kill //p' $f && exit 0; done; echo 0`;

class DockerSandbox implements Sandbox {
  private oomKills = 0;
  private released = false;

  constructor(
    private readonly docker: Docker,
    private readonly container: Docker.Container,
    readonly imageDigest: string,
    private readonly user: string,
    private readonly onRelease: () => void,
  ) {}

  get id(): string {
    return this.container.id;
  }

  async exec(command: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    const timeoutMs = options.timeoutMs ?? 30_000;
    const maxOutputBytes = options.maxOutputBytes ?? 64 * 1024;
    const seconds = Math.max(1, Math.ceil(timeoutMs / 1000));
    // coreutils timeout signals its whole process group, so children die with the command.
    const wrapped = ['timeout', '--kill-after=2', `${seconds}s`, ...command];
    const started = performance.now();
    const stdout = new CappedBuffer(maxOutputBytes);
    const stderr = new CappedBuffer(maxOutputBytes);
    let exec: Docker.Exec;
    try {
      exec = await this.container.exec({
        Cmd: wrapped,
        AttachStdout: true,
        AttachStderr: true,
        AttachStdin: options.stdin !== undefined,
        User: this.user,
        WorkingDir: options.cwd ?? WORKSPACE,
        Env: Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${v}`),
      });
    } catch (error) {
      throw new SandboxError(`creating an exec in sandbox ${this.id.slice(0, 12)} failed: ${errorMessage(error)}`, { retriable: true, cause: error });
    }
    const stream = await exec.start({ hijack: true, stdin: options.stdin !== undefined });
    const out = new PassThrough().on('data', (chunk: Buffer) => stdout.push(chunk));
    const err = new PassThrough().on('data', (chunk: Buffer) => stderr.push(chunk));
    this.docker.modem.demuxStream(stream, out, err);
    if (options.stdin !== undefined) stream.end(options.stdin);

    // The in-container timeout normally ends the command; this guard covers a wedged engine or stream.
    let hostTimedOut = false;
    await new Promise<void>((resolve) => {
      const guard = setTimeout(() => {
        hostTimedOut = true;
        stream.destroy();
      }, timeoutMs + 5_000);
      const onAbort = (): void => {
        hostTimedOut = true;
        stream.destroy();
      };
      options.signal?.addEventListener('abort', onAbort, { once: true });
      const done = (): void => {
        clearTimeout(guard);
        options.signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      stream.on('end', done).on('close', done).on('error', done);
    });
    const durationMs = performance.now() - started;
    const exitCode = hostTimedOut ? null : ((await exec.inspect()).ExitCode ?? null);
    let status: ExecResult['status'] = 'exited';
    if (hostTimedOut || exitCode === 124 || (exitCode === 137 && durationMs >= timeoutMs)) status = 'timeout';
    else if (exitCode === 137 && (await this.sawNewOomKill())) status = 'oom';
    return { status, exitCode, stdout: stdout.toString(), stderr: stderr.toString(), truncated: stdout.truncated || stderr.truncated, durationMs };
  }

  async writeFiles(files: FileTree, dir = WORKSPACE): Promise<void> {
    const result = await this.exec(['python3', '-c', WRITE_FILES], { stdin: JSON.stringify({ dir, files }), cwd: '/' });
    if (result.exitCode !== 0) throw new SandboxError(`writing ${Object.keys(files).join(', ')} into ${dir} failed: ${result.stderr.trim()}`);
  }

  async readFiles(paths: readonly string[], dir = WORKSPACE): Promise<FileTree> {
    const result = await this.exec(['python3', '-c', READ_FILES], { stdin: JSON.stringify({ dir, paths }), cwd: '/', maxOutputBytes: 16 * 1024 * 1024 });
    if (result.exitCode !== 0) throw new SandboxError(`reading ${paths.join(', ')} from ${dir} failed: ${result.stderr.trim()}`);
    return JSON.parse(result.stdout) as FileTree;
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.onRelease();
    await this.container.remove({ force: true, v: true }).catch((error: unknown) => {
      // Already gone (engine restarted or reaped): nothing is leaked.
      if (!/no such container|404/i.test(errorMessage(error))) throw new SandboxError(`removing sandbox ${this.id.slice(0, 12)} failed: ${errorMessage(error)}`, { cause: error });
    });
  }

  /** True when the container's cgroup counted an OOM kill since the last check. */
  private async sawNewOomKill(): Promise<boolean> {
    const probe = await this.container.exec({ Cmd: ['sh', '-c', OOM_KILLS], AttachStdout: true, AttachStderr: true, User: '0' });
    const stream = await probe.start({ hijack: true, stdin: false });
    const out = new CappedBuffer(1024);
    const sink = new PassThrough().on('data', (chunk: Buffer) => out.push(chunk));
    this.docker.modem.demuxStream(stream, sink, new PassThrough());
    await new Promise((resolve) => stream.on('end', resolve).on('close', resolve));
    const count = Number.parseInt(out.toString().trim(), 10) || 0;
    const isNew = count > this.oomKills;
    this.oomKills = Math.max(count, this.oomKills);
    return isNew;
  }
}

/**
 * Sandboxes as Docker containers: no network, read-only root, all capabilities dropped,
 * no-new-privileges, non-root, CPU/memory (no swap)/pids/open-file/file-size limits, and sized tmpfs
 * workspace and /tmp. Each acquire creates a fresh container; release destroys it.
 */
export class DockerSandboxPool implements SandboxPool {
  readonly owner: string;
  private readonly docker: Docker;
  private readonly limits: ResolvedSandboxLimits;
  private readonly user: string;
  private readonly held = new Set<Sandbox>();
  private readonly digests = new Map<string, Promise<string>>();

  constructor(options: DockerPoolOptions = {}) {
    this.docker = options.docker ?? new Docker();
    this.owner = options.owner ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.limits = options.limits ?? resolveSandboxLimits();
    this.user = options.user ?? '1000:1000';
  }

  async acquire(options: AcquireOptions): Promise<Sandbox> {
    const limits = options.limits ? resolveSandboxLimits({ ...this.limits, ...options.limits }) : this.limits;
    const imageDigest = await this.digestOf(options.image);
    let container: Docker.Container;
    try {
      container = await this.docker.createContainer({
        Image: options.image,
        Cmd: ['sleep', 'infinity'],
        User: this.user,
        WorkingDir: WORKSPACE,
        NetworkDisabled: true,
        Labels: {
          [LABELS.owner]: this.owner,
          [LABELS.runId]: options.runId,
          [LABELS.taskId]: options.taskId,
          [LABELS.createdAt]: new Date().toISOString(),
        },
        HostConfig: {
          NetworkMode: 'none',
          ReadonlyRootfs: true,
          CapDrop: ['ALL'],
          SecurityOpt: ['no-new-privileges'],
          Memory: limits.memoryBytes,
          MemorySwap: limits.memoryBytes,
          NanoCpus: Math.round(limits.cpus * 1e9),
          PidsLimit: limits.pids,
          Ulimits: [
            { Name: 'nofile', Soft: limits.openFiles, Hard: limits.openFiles },
            { Name: 'fsize', Soft: limits.fileSizeBytes, Hard: limits.fileSizeBytes },
          ],
          Tmpfs: {
            [WORKSPACE]: `rw,nosuid,nodev,size=${limits.workspaceBytes},uid=1000,gid=1000,mode=0755`,
            '/tmp': `rw,nosuid,nodev,size=${limits.tmpBytes},mode=1777`,
          },
        },
      });
      await container.start();
    } catch (error) {
      throw new SandboxError(`starting a sandbox from ${options.image} failed: ${errorMessage(error)}`, { retriable: true, cause: error });
    }
    const sandbox: Sandbox = new DockerSandbox(this.docker, container, imageDigest, this.user, () => this.held.delete(sandbox));
    this.held.add(sandbox);
    return sandbox;
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.held].map((sandbox) => sandbox.release()));
  }

  private digestOf(image: string): Promise<string> {
    let digest = this.digests.get(image);
    if (!digest) {
      digest = this.docker
        .getImage(image)
        .inspect()
        .then((info) => info.Id)
        .catch((error: unknown) => {
          this.digests.delete(image);
          throw new SandboxError(`sandbox image ${image} is not available: ${errorMessage(error)} (run \`trialrun stack up\` to build it)`, { cause: error });
        });
      this.digests.set(image, digest);
    }
    return digest;
  }
}
