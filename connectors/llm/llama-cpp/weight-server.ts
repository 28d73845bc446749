import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ConfigError, ConnectionError, wholeNumber } from '../../../schemas/index.js';
import { getJsonOrNull } from '../http.js';
import { servedModelName, servedVersionOf, type ServedAdapter, type WeightServer } from '../weight-server.js';
import { servedModelPath } from './client.js';

/** How a local llama.cpp server is launched: the model name it answers to, the LoRA adapter it applies, its CPU threads. */
export interface LlamaCppLaunch {
  readonly alias: string;
  readonly lora: string | null;
  readonly threads: number;
}

/**
 * A llama.cpp server this process may restart: what only the one who started it knows (the stack: its daemon,
 * its launcher, the converter's virtualenv). Connectors start no processes; stack/ passes this in.
 */
export interface LocalLlamaCppServer {
  /** Its OpenAI-compatible base URL (`.../v1`). */
  readonly url: string;
  /** The base model's name (version 0 is served under it, version N as `<model>@v<N>`). */
  readonly model: string;
  /** Who may restart it, for errors ("the stack of /state/dir"). */
  readonly owner: string;
  /** Stops the server if it is the one this stack started ('stopped'); 'not-running' when no such server runs. */
  stop(): Promise<'stopped' | 'not-running'>;
  /** Starts it (it must not run) and resolves once it answers. */
  start(launch: LlamaCppLaunch): Promise<void>;
  /**
   * Writes the GGUF LoRA of version `version`'s peft artifact (the file `artifact`) for the base GGUF `baseGguf` to
   * `out`; an IncompatibleAdapterError when the adapter does not fit that base.
   */
  convertAdapter(conversion: { readonly version: number; readonly artifact: string; readonly baseGguf: string; readonly out: string }, signal: AbortSignal): Promise<void>;
}

export interface LlamaCppWeightServerOptions {
  readonly server: LocalLlamaCppServer;
  /** Where adapters are kept (the artifact and its GGUF form, per version). */
  readonly workDir: string;
  /** Threads of every start until `useThreads` changes them. */
  readonly threads: number;
}

/** Budget of the status read (`/v1/models`): a server that takes longer is reported as not answering. */
const STATUS_READ_TIMEOUT_MS = 10_000;

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

/**
 * Weight sync for a llama.cpp server of this stack: each version's adapter is converted to a GGUF LoRA (which checks
 * the base GGUF's sha256 first) and the server is restarted with `--lora <file>` and `--alias <model>@v<N>`, since
 * llama.cpp applies only adapters loaded at start. Replies then name the version in their `model` field. Only a
 * server the stack started is restarted (`LocalLlamaCppServer.stop` proves it); any other is refused.
 */
export class LlamaCppWeightServer implements WeightServer {
  readonly kind = 'llama.cpp' as const;
  private readonly server: LocalLlamaCppServer;
  private readonly root: string;
  private readonly workDir: string;
  private baseModel: Promise<{ path: string; sha256: string }> | null = null;
  // Threads of every start from here on (useThreads changes them); null until this object knows what the running
  // server was started with (the stack's `ensure` may have started it before).
  private threads: number;
  private runningThreads: number | null = null;
  // What this object last launched: a restart on other threads relaunches the same weights.
  private launched: { version: number; lora: string | null } | null = null;

  constructor(options: LlamaCppWeightServerOptions) {
    this.server = options.server;
    this.root = options.server.url.replace(/\/+$/, '').replace(/\/v1$/, '');
    this.workDir = resolve(options.workDir);
    this.threads = options.threads;
  }

  /** The GGUF the server loads, as it reports it; hashed once. */
  private base(): Promise<{ path: string; sha256: string }> {
    this.baseModel ??= (async () => {
      const path = await servedModelPath(this.root);
      if (path === null) throw new ConnectionError(`GET ${this.root}/props: no model_path`);
      return { path, sha256: await sha256File(path) };
    })().catch((error: unknown) => {
      this.baseModel = null;
      throw error;
    });
    return this.baseModel;
  }

  async baseSha256(): Promise<string | null> {
    return (await this.base()).sha256;
  }

  async servedVersion(signal?: AbortSignal): Promise<number | null> {
    const listed = await getJsonOrNull<{ data?: Array<{ id?: unknown }> }>(`${this.server.url.replace(/\/+$/, '')}/models`, { timeoutMs: STATUS_READ_TIMEOUT_MS, signal });
    const id = listed?.data?.[0]?.id;
    return typeof id === 'string' ? servedVersionOf(id) : null;
  }

  async useThreads(count: number, signal: AbortSignal): Promise<void> {
    wholeNumber('useThreads: threads', count, { min: 1 });
    this.threads = count;
    if (this.runningThreads === count) return;
    if (this.launched === null) {
      // Started by someone else of this stack (its `ensure`, an earlier process): the version it serves names
      // the adapter, which is kept beside the others while it is served.
      const version = await this.servedVersion(signal);
      if (version === null) throw new ConnectionError(`the model server at ${this.server.url} does not answer: cannot restart it on ${count} threads`);
      const lora = version === 0 ? null : join(this.workDir, `v${version}.gguf`);
      if (lora !== null && !(await readdir(this.workDir).catch(() => [] as string[])).includes(`v${version}.gguf`)) {
        throw new ConfigError(`the model server at ${this.server.url} serves v${version}, whose adapter is not in ${this.workDir}: serve it again before changing its threads`);
      }
      this.launched = { version, lora };
    }
    await this.restart(this.launched.version, this.launched.lora, signal);
  }

  async serve(adapter: ServedAdapter | null, signal: AbortSignal): Promise<void> {
    const { path: baseGguf } = await this.base();
    let lora: string | null = null;
    if (adapter) {
      await mkdir(this.workDir, { recursive: true });
      const artifact = join(this.workDir, `v${adapter.version}.safetensors`);
      lora = join(this.workDir, `v${adapter.version}.gguf`);
      await writeFile(artifact, adapter.bytes);
      try {
        await this.server.convertAdapter({ version: adapter.version, artifact, baseGguf, out: lora }, signal);
      } finally {
        await rm(artifact, { force: true });
      }
    }
    await this.restart(adapter?.version ?? 0, lora, signal);
    // Only the adapter being served is kept (a rollback converts its artifact again).
    for (const file of await readdir(this.workDir).catch(() => [] as string[])) {
      if (/^v\d+\.gguf$/.test(file) && join(this.workDir, file) !== lora) await rm(join(this.workDir, file), { force: true });
    }
  }

  private async restart(version: number, lora: string | null, signal: AbortSignal): Promise<void> {
    if ((await this.server.stop()) !== 'stopped' && (await this.servedVersion()) !== null) {
      throw new ConfigError(`the model server at ${this.server.url} was not started by ${this.server.owner}: weight sync restarts only its own`);
    }
    await this.server.start({ alias: servedModelName(this.server.model, version), lora, threads: this.threads });
    this.launched = { version, lora };
    this.runningThreads = this.threads;
    const serving = await this.servedVersion(signal);
    if (serving !== version) throw new ConnectionError(`the restarted model server at ${this.server.url} serves v${serving ?? '?'}, not v${version}`);
  }
}
