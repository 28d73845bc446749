import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ConfigError, resolveRetryOptions, type ResolvedRetryOptions, type RetryOptions } from '../../schemas/index.js';
import type { LoraArtifactInfo } from '../checkpoints/index.js';
import { ChatRequestError, postForText, postJson } from './http.js';

/** The server kinds weight sync applies checkpoints to. */
export const WEIGHT_SERVER_KINDS = ['llama.cpp', 'vllm', 'sglang'] as const;
export type WeightServerKind = (typeof WEIGHT_SERVER_KINDS)[number];

/** A checkpoint's adapter, its bytes already checked against the record's sha256. */
export interface ServedAdapter {
  readonly version: number;
  readonly bytes: Buffer;
  readonly info: LoraArtifactInfo;
}

/**
 * An inference server whose weights weight sync sets. `serve` resolves once the server answers with the
 * new weights, under a model name that carries their version (`servedModelName`), so that every reply
 * names the version that produced it.
 */
export interface WeightServer {
  readonly kind: WeightServerKind;
  /** sha256 of the base weights the server loads, when known: an adapter trained on others is refused. */
  baseSha256(): Promise<string | null>;
  /** Serves `adapter` on the base model, or the base model alone (version 0) for null. */
  serve(adapter: ServedAdapter | null, signal: AbortSignal): Promise<void>;
  /** The version the server serves now (0: the base model), or null when it does not answer. */
  servedVersion(signal?: AbortSignal): Promise<number | null>;
  /**
   * Where the server's CPU threads are this process's to set (a llama.cpp server the stack started): serves the
   * same weights on `threads` threads from now on, restarting the server if it runs on another count. The loop
   * shares the cores with the learner; a held-out evaluation, while the learner is idle, may take them all.
   * Servers on their own machines leave it out.
   */
  useThreads?(threads: number, signal: AbortSignal): Promise<void>;
}

/** The name a server serves version `version` of `base` under: the base's own for 0, `<base>@v<N>` after. */
export const servedModelName = (base: string, version: number): string => (version === 0 ? base : `${base}@v${version}`);

/** The version a served model name carries (`<base>@v<N>`); any other name is the base model, version 0. */
export function servedVersionOf(model: string): number {
  const match = /@v(\d+)$/.exec(model);
  return match ? Number(match[1]) : 0;
}

interface HttpServerOptions {
  /** The server's root (not its OpenAI `/v1` base). */
  rootUrl: string;
  /** The base model's name on the server. */
  model: string;
  /** A folder the server can read (the same path on its machine): adapters and weights are written there. */
  workDir: string;
  /** sha256 of the GGUF the adapters were trained on, when this server's base is that model. @default null (not checked) */
  baseSha256?: string | null;
  /** @default none */
  apiKey?: string | null;
  /** Budget for one HTTP attempt (loading weights takes a while). @default 300000 */
  timeoutMs?: number;
  /** @default { retries: 3, initialDelayMs: 500, maxDelayMs: 10000 } */
  retry?: RetryOptions;
}

abstract class HttpWeightServer implements WeightServer {
  abstract readonly kind: WeightServerKind;
  protected readonly rootUrl: string;
  protected readonly workDir: string;
  protected readonly post: { apiKey: string | null; timeoutMs: number; retry: ResolvedRetryOptions };

  constructor(protected readonly options: HttpServerOptions) {
    this.rootUrl = options.rootUrl.replace(/\/+$/, '');
    if (!/^https?:\/\/[^/]/.test(this.rootUrl)) throw new ConfigError(`weight server rootUrl "${options.rootUrl}" is not an http(s) URL`);
    if (options.model.trim() === '') throw new ConfigError('weight server model is empty');
    const timeoutMs = options.timeoutMs ?? 300_000;
    if (!(timeoutMs > 0)) throw new ConfigError(`weight server timeoutMs must be > 0, got ${timeoutMs}`);
    this.workDir = resolve(options.workDir);
    this.post = { apiKey: options.apiKey ?? null, timeoutMs, retry: resolveRetryOptions({ retries: 3, initialDelayMs: 500, maxDelayMs: 10_000, ...options.retry }) };
  }

  async baseSha256(): Promise<string | null> {
    return this.options.baseSha256 ?? null;
  }

  abstract serve(adapter: ServedAdapter | null, signal: AbortSignal): Promise<void>;
  abstract servedVersion(signal?: AbortSignal): Promise<number | null>;

  protected async getJson<T>(path: string, signal?: AbortSignal): Promise<T | null> {
    try {
      const response = await fetch(`${this.rootUrl}${path}`, {
        headers: this.post.apiKey ? { authorization: `Bearer ${this.post.apiKey}` } : {},
        signal: AbortSignal.any([signal ?? new AbortController().signal, AbortSignal.timeout(10_000)]),
      });
      return response.ok ? ((await response.json()) as T) : null;
    } catch {
      return null;
    }
  }

  /** Writes `adapter` as the folder peft saves (adapter_config.json, adapter_model.safetensors), atomically. */
  protected async writePeftFolder(adapter: ServedAdapter): Promise<string> {
    const dir = join(this.workDir, `v${adapter.version}`);
    const temp = `${dir}.tmp-${process.pid}`;
    await rm(temp, { recursive: true, force: true });
    await mkdir(temp, { recursive: true });
    const config = { peft_type: 'LORA', task_type: 'CAUSAL_LM', ...adapter.info.peftConfig, base_model_name_or_path: this.options.model };
    await writeFile(join(temp, 'adapter_config.json'), JSON.stringify(config, null, 2));
    await writeFile(join(temp, 'adapter_model.safetensors'), adapter.bytes);
    await rm(dir, { recursive: true, force: true });
    await rename(temp, dir);
    return dir;
  }
}

/**
 * vLLM: each version is a LoRA adapter loaded at runtime (`POST /v1/load_lora_adapter {lora_name, lora_path}`,
 * which needs the server started with --enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True) under the name
 * `<model>@v<N>`; the adapters of other versions are then unloaded (`/v1/unload_lora_adapter`), so the server
 * lists exactly the version it serves. Requests name the adapter as their model, and replies echo it. Both
 * endpoints answer in plain text (`Success: LoRA adapter ... added successfully.`); an error is an HTTP status.
 */
export class VllmWeightServer extends HttpWeightServer {
  readonly kind = 'vllm' as const;

  async serve(adapter: ServedAdapter | null, signal: AbortSignal): Promise<void> {
    const keep = adapter ? servedModelName(this.options.model, adapter.version) : null;
    if (adapter) {
      const path = await this.writePeftFolder(adapter);
      await postForText(`${this.rootUrl}/v1/load_lora_adapter`, { lora_name: keep, lora_path: path }, { ...this.post, signal });
    }
    for (const name of await this.loadedVersions(signal)) {
      if (name !== keep) await postForText(`${this.rootUrl}/v1/unload_lora_adapter`, { lora_name: name }, { ...this.post, signal });
    }
  }

  async servedVersion(signal?: AbortSignal): Promise<number | null> {
    const names = await this.loadedVersionsOrNull(signal);
    if (names === null) return null;
    return Math.max(0, ...names.map(servedVersionOf));
  }

  private async loadedVersions(signal: AbortSignal): Promise<string[]> {
    const names = await this.loadedVersionsOrNull(signal);
    if (names === null) throw new ChatRequestError(`GET ${this.rootUrl}/v1/models did not answer with a model list`);
    return names;
  }

  /** The adapters of this base the server lists (`<model>@v<N>`). */
  private async loadedVersionsOrNull(signal?: AbortSignal): Promise<string[] | null> {
    const listed = await this.getJson<{ data?: Array<{ id?: unknown }> }>('/v1/models', signal);
    if (!listed || !Array.isArray(listed.data)) return null;
    const prefix = `${this.options.model}@v`;
    return listed.data.flatMap((m) => (typeof m.id === 'string' && m.id.startsWith(prefix) && servedVersionOf(m.id) > 0 ? [m.id] : []));
  }
}

/** Writes the base model with the peft adapter at `adapterDir` merged into a whole HF model folder at `outDir`. */
export type MergeWeights = (adapterDir: string, outDir: string, signal: AbortSignal) => Promise<void>;

/**
 * SGLang: the weights are replaced in place (`POST /update_weights_from_disk {model_path, weight_version}`), so
 * `model_path` must be a whole model folder: the base with the adapter merged (`merge`, in the HF layout). The
 * version goes as `weight_version`, which `/model_info` reports back. The merged folder of the version served
 * before is removed once the new one is served.
 */
export class SglangWeightServer extends HttpWeightServer {
  readonly kind = 'sglang' as const;
  private readonly basePath: string;
  private readonly merge: MergeWeights;

  constructor(options: HttpServerOptions & { /** The base model's own folder (served for version 0). */ basePath: string; merge: MergeWeights }) {
    super(options);
    this.basePath = options.basePath;
    this.merge = options.merge;
  }

  async serve(adapter: ServedAdapter | null, signal: AbortSignal): Promise<void> {
    let modelPath = this.basePath;
    if (adapter) {
      const adapterDir = await this.writePeftFolder(adapter);
      modelPath = join(this.workDir, `merged-v${adapter.version}`);
      await this.merge(adapterDir, modelPath, signal);
      await rm(adapterDir, { recursive: true, force: true });
    }
    const { value } = await postJson<{ success?: unknown; message?: unknown }>(
      `${this.rootUrl}/update_weights_from_disk`,
      { model_path: modelPath, weight_version: String(adapter?.version ?? 0), abort_all_requests: false },
      { ...this.post, signal },
    );
    if (value.success !== true) throw new ChatRequestError(`SGLang refused the weights at ${modelPath}: ${typeof value.message === 'string' ? value.message : JSON.stringify(value)}`);
    for (const entry of await readdir(this.workDir).catch(() => [] as string[])) {
      if (/^merged-v\d+$/.test(entry) && join(this.workDir, entry) !== modelPath) await rm(join(this.workDir, entry), { recursive: true, force: true });
    }
  }

  async servedVersion(signal?: AbortSignal): Promise<number | null> {
    const info = await this.getJson<{ weight_version?: unknown }>('/model_info', signal);
    if (!info) return null;
    const version = Number(info.weight_version ?? 0);
    return Number.isSafeInteger(version) && version >= 0 ? version : 0;
  }
}
