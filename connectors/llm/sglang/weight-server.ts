import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ChatRequestError, postJson } from '../http.js';
import { HttpWeightServer, type HttpWeightServerOptions } from '../http-weight-server.js';
import type { ServedAdapter } from '../weight-server.js';

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

  constructor(options: HttpWeightServerOptions & { /** The base model's own folder (served for version 0). */ basePath: string; merge: MergeWeights }) {
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
