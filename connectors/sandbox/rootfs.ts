import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type Docker from 'dockerode';
import { ConfigError, SandboxError, errorMessage } from '../../schemas/index.js';
import { LABELS, agentCommand } from './docker.js';

/** An image's file system unpacked into a folder, with what the process backend needs from its config. */
export interface ImageRootfs {
  readonly image: string;
  /** The image id, stamped on records as lineage exactly as the Docker backend does. */
  readonly digest: string;
  readonly dir: string;
  readonly env: Readonly<Record<string, string>>;
  readonly agent: readonly string[];
  /** The image's declared volumes (Dockerfile VOLUME) other than /workspace and /tmp; a cache exported before they were recorded has none. */
  readonly volumes: readonly string[];
}

/**
 * `$TRIALRUN_CACHE_DIR/sandbox-rootfs` (the stack's cache folder); without it, root uses /var/cache/trialrun
 * (its home is closed to the sandbox user that bwrap runs as) and anyone else `~/.cache/trialrun`.
 */
export function defaultRootfsDir(env: NodeJS.ProcessEnv = process.env): string {
  const root = process.getuid?.() === 0 ? '/var/cache/trialrun' : join(homedir(), '.cache', 'trialrun');
  return join(resolve(env.TRIALRUN_CACHE_DIR ?? root), 'sandbox-rootfs');
}

const safeName = (image: string): string => image.replace(/[^a-zA-Z0-9_.-]+/g, '_');

/**
 * Image root file systems for the process backend, cached by image id under `cacheDir/<id>/` (the `rootfs/`
 * folder and `image.json`), with `cacheDir/tags/<tag>.json` naming the id of each tag. A missing one is exported
 * from the Docker engine once; a host without Docker uses folders copied from one that has it.
 */
export class RootfsStore {
  private readonly loading = new Map<string, Promise<ImageRootfs>>();

  constructor(
    readonly cacheDir: string,
    private readonly docker: Docker | null,
    /** Labels the short-lived export container, so the reaper removes it if we die mid-export. */
    private readonly owner: string,
  ) {}

  get(image: string): Promise<ImageRootfs> {
    let rootfs = this.loading.get(image);
    if (!rootfs) {
      rootfs = this.load(image);
      rootfs.catch(() => this.loading.delete(image));
      this.loading.set(image, rootfs);
    }
    return rootfs;
  }

  private async load(image: string): Promise<ImageRootfs> {
    const tagFile = join(this.cacheDir, 'tags', `${safeName(image)}.json`);
    let inspected: Docker.ImageInspectInfo | null = null;
    if (this.docker) {
      inspected = await this.docker
        .getImage(image)
        .inspect()
        .catch(() => null);
    }
    const digest = inspected?.Id ?? (existsSync(tagFile) ? (JSON.parse(readFileSync(tagFile, 'utf8')) as { digest: string }).digest : null);
    if (digest === null) {
      throw new ConfigError(
        `no root file system for ${image}: it is not in ${this.cacheDir} and ${this.docker ? 'the Docker engine does not have it' : 'no Docker engine was given'}; ` +
          `run \`trialrun sandbox rootfs ${image}\` on a machine with Docker and copy ${this.cacheDir} here`,
      );
    }
    const dir = join(this.cacheDir, safeName(digest));
    const metaFile = join(dir, 'image.json');
    if (!existsSync(metaFile)) {
      if (!inspected || !this.docker) throw new ConfigError(`${tagFile} names ${digest}, but ${dir} is missing; export ${image} again`);
      await this.export(image, inspected, dir);
    }
    mkdirSync(join(this.cacheDir, 'tags'), { recursive: true });
    writeFileSync(tagFile, JSON.stringify({ image, digest }));
    const meta = JSON.parse(readFileSync(metaFile, 'utf8')) as Omit<ImageRootfs, 'dir' | 'volumes'> & { volumes?: string[] };
    return { ...meta, volumes: meta.volumes ?? [], image, dir: join(dir, 'rootfs') };
  }

  /** `docker export` of a never-started container, unpacked next to `dir` and renamed into place in one step. */
  private async export(image: string, inspected: Docker.ImageInspectInfo, dir: string): Promise<void> {
    const docker = this.docker!;
    const staging = `${dir}.partial-${randomUUID().slice(0, 8)}`;
    mkdirSync(join(staging, 'rootfs'), { recursive: true, mode: 0o755 });
    const container = await docker.createContainer({ Image: image, Entrypoint: ['/bin/true'], Cmd: [], Labels: { [LABELS.owner]: this.owner, [LABELS.taskId]: `rootfs-export ${image}` } });
    try {
      const tarball = await container.export();
      // /dev is mounted fresh in every sandbox; its nodes could not be created without root anyway.
      const tar = spawn('tar', ['-x', '-f', '-', '-C', join(staging, 'rootfs'), '--numeric-owner', '--exclude=dev/*', '--exclude=.dockerenv'], { stdio: ['pipe', 'ignore', 'pipe'] });
      let tarErrors = '';
      tar.stderr.on('data', (chunk: Buffer) => void (tarErrors = (tarErrors + chunk.toString()).slice(-2000)));
      const exited = new Promise<number>((done) => tar.on('close', (code) => done(code ?? 1)));
      await pipeline(tarball, tar.stdin);
      const code = await exited;
      if (code !== 0) throw new SandboxError(`unpacking ${image} failed (tar exit ${code}): ${tarErrors}`);
      const env = Object.fromEntries((inspected.Config?.Env ?? []).map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]));
      const volumes = Object.keys(inspected.Config?.Volumes ?? {}).filter((path) => path !== '/workspace' && path !== '/tmp');
      const meta = { image, digest: inspected.Id, env, agent: agentCommand(image, inspected.Config?.Labels ?? {}), volumes };
      writeFileSync(join(staging, 'image.json'), JSON.stringify(meta, null, 2));
      try {
        renameSync(staging, dir);
      } catch (error) {
        // Another executor exported the same image first: theirs is as good as ours.
        if (!existsSync(join(dir, 'image.json'))) throw error;
        rmSync(staging, { recursive: true, force: true });
      }
    } catch (error) {
      rmSync(staging, { recursive: true, force: true });
      throw error instanceof ConfigError || error instanceof SandboxError ? error : new SandboxError(`exporting ${image} failed: ${errorMessage(error)}`, { cause: error });
    } finally {
      await container.remove({ force: true }).catch(() => undefined);
    }
  }
}
