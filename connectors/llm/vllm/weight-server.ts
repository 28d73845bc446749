import { ChatRequestError, postForText } from '../http.js';
import { HttpWeightServer } from '../http-weight-server.js';
import { servedModelName, servedVersionOf, type ServedAdapter } from '../weight-server.js';

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
