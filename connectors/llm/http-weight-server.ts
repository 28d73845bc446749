import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ConfigError, resolveRetryOptions, type ResolvedRetryOptions, type RetryOptions } from '../../schemas/index.js';
import { getJsonOrNull } from './http.js';
import type { ServedAdapter, WeightServer, WeightServerKind } from './weight-server.js';

/** Budget of a status read (the served version): a server that takes longer is reported as not answering. */
const STATUS_READ_TIMEOUT_MS = 10_000;

/**
 * What the weight servers that take adapters over HTTP share (vllm/, sglang/): their options, the status GET, and
 * the adapter written as the folder peft saves, where the server can read it.
 */
export interface HttpWeightServerOptions {
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

export abstract class HttpWeightServer implements WeightServer {
  abstract readonly kind: WeightServerKind;
  protected readonly rootUrl: string;
  protected readonly workDir: string;
  protected readonly post: { apiKey: string | null; timeoutMs: number; retry: ResolvedRetryOptions };

  constructor(protected readonly options: HttpWeightServerOptions) {
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

  /** `path` on the server, or null when it does not answer it (restarting, gone, or an error status). */
  protected getJson<T>(path: string, signal?: AbortSignal): Promise<T | null> {
    return getJsonOrNull<T>(`${this.rootUrl}${path}`, { apiKey: this.post.apiKey, timeoutMs: STATUS_READ_TIMEOUT_MS, signal });
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
