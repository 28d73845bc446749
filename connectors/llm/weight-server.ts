import type { LoraArtifactInfo } from '../checkpoints/index.js';

/** The server kinds weight sync applies checkpoints to (each a folder beside this file: llama-cpp/, vllm/, sglang/). */
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
