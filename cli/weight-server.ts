import { join, resolve } from 'node:path';
import { SglangWeightServer, VllmWeightServer, WEIGHT_SERVER_KINDS, type WeightServer, type WeightServerKind } from '../connectors/llm/index.js';
import type { ResolvedLlmPolicyOptions } from '../policies/index.js';
import { ConfigError, STACK_LLM_MODEL, STACK_LLM_URL } from '../schemas/index.js';
import { llamaCppWeightServer, mergeLoraWeights } from '../stack/index.js';
import { stateDir } from './paths.js';

/** Which inference server weight sync applies checkpoints to, and how to reach it. */
export interface WeightServerOptions {
  /** 'llama.cpp' (the stack's server, restarted with the adapter), 'vllm' (runtime LoRA loading), 'sglang' (merged weights in place). @default 'llama.cpp' */
  kind?: WeightServerKind;
  /** The server's OpenAI-compatible base URL. @default env LLM_BASE_URL, else the stack's STACK_LLM_URL */
  url?: string;
  /** The base model's name on the server. @default env LLM_MODEL, else STACK_LLM_MODEL */
  model?: string;
  /** A folder the server can read, for adapters and merged weights. @default `<state folder>/weight-sync` */
  workDir?: string;
  /** vllm, sglang: sha256 of the GGUF the adapters were trained on, when the server's base is that model (llama.cpp hashes the GGUF it loads). @default not checked */
  baseSha256?: string;
  /** sglang: the base model's HF folder (what version 0 serves, and what adapters are merged into). @default none: required for sglang */
  basePath?: string;
}

export type ResolvedWeightServerOptions = Required<Pick<WeightServerOptions, 'kind' | 'url' | 'model' | 'workDir'>> & { readonly baseSha256: string | null; readonly basePath: string | null };

/** Every option checked, with its default; a bad value or combination is a ConfigError naming it. */
export function resolveWeightServerOptions(options: WeightServerOptions = {}, env: NodeJS.ProcessEnv = process.env): ResolvedWeightServerOptions {
  const kind = options.kind ?? 'llama.cpp';
  if (!WEIGHT_SERVER_KINDS.includes(kind)) throw new ConfigError(`WeightServerOptions.kind must be one of ${WEIGHT_SERVER_KINDS.join(', ')}, got "${String(kind)}"`);
  const url = (options.url ?? env.LLM_BASE_URL ?? STACK_LLM_URL).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]/.test(url)) throw new ConfigError(`WeightServerOptions.url "${url}" is not an http(s) URL`);
  const model = options.model ?? env.LLM_MODEL ?? STACK_LLM_MODEL;
  if (model.trim() === '') throw new ConfigError('WeightServerOptions.model is empty');
  const baseSha256 = options.baseSha256 ?? null;
  if (baseSha256 !== null && !/^[0-9a-f]{64}$/.test(baseSha256)) throw new ConfigError(`WeightServerOptions.baseSha256 must be 64 lowercase hex digits, got "${baseSha256}"`);
  if (kind === 'llama.cpp' && baseSha256 !== null) throw new ConfigError('WeightServerOptions.baseSha256 goes with vllm or sglang: llama.cpp hashes the GGUF it loads');
  const basePath = options.basePath === undefined ? null : resolve(options.basePath);
  if (kind === 'sglang' && basePath === null) throw new ConfigError('WeightServerOptions.basePath (the base model\'s HF folder) is required for sglang: its weights are replaced by the merged model');
  if (kind !== 'sglang' && basePath !== null) throw new ConfigError('WeightServerOptions.basePath goes with sglang only');
  return { kind, url, model, workDir: resolve(options.workDir ?? join(stateDir(env), 'weight-sync')), baseSha256, basePath };
}

/** The server weight sync drives, for resolved options. */
export function weightServerFor(options: ResolvedWeightServerOptions): WeightServer {
  const rootUrl = options.url.replace(/\/v1$/, '');
  if (options.kind === 'llama.cpp') return llamaCppWeightServer({ url: options.url, model: options.model, external: options.url !== STACK_LLM_URL, workDir: join(options.workDir, 'llama.cpp') });
  const common = { rootUrl, model: options.model, baseSha256: options.baseSha256, apiKey: process.env.LLM_API_KEY ?? null };
  if (options.kind === 'vllm') return new VllmWeightServer({ ...common, workDir: join(options.workDir, 'vllm') });
  return new SglangWeightServer({ ...common, workDir: join(options.workDir, 'sglang'), basePath: options.basePath!, merge: mergeLoraWeights(options.basePath!) });
}

/** `run weight-sync`'s flags, one per WeightServerOptions field. */
export const WEIGHT_SERVER_OPTIONS = {
  'server-kind': { type: 'string' },
  'server-url': { type: 'string' },
  'server-model': { type: 'string' },
  'weights-dir': { type: 'string' },
  'base-sha256': { type: 'string' },
  'base-path': { type: 'string' },
} as const;

export const WEIGHT_SERVER_HELP: Readonly<Record<keyof typeof WEIGHT_SERVER_OPTIONS, string>> = {
  'server-kind': `weight-sync: the inference server kind, ${WEIGHT_SERVER_KINDS.join(', ')} (default: llama.cpp, the stack's server, restarted with each version)`,
  'server-url': `weight-sync: its OpenAI-compatible base URL (default: env LLM_BASE_URL, else ${STACK_LLM_URL})`,
  'server-model': `weight-sync: the base model's name there (default: env LLM_MODEL, else ${STACK_LLM_MODEL})`,
  'weights-dir': 'weight-sync: a folder the server can read, for adapters and merged weights (default: weight-sync under the state folder)',
  'base-sha256': 'weight-sync, vllm/sglang: sha256 of the GGUF the adapters were trained on, checked against each artifact (default: not checked)',
  'base-path': 'weight-sync, sglang: the base model\'s HF folder, into which each adapter is merged',
};

const FIELD_OF_FLAG = { 'server-kind': 'kind', 'server-url': 'url', 'server-model': 'model', 'weights-dir': 'workDir', 'base-sha256': 'baseSha256', 'base-path': 'basePath' } as const;

/** The weight server flags resolved (for `run weight-sync`), or null for another processor, which must not get them. */
export function weightServerChoice(values: Readonly<Record<string, unknown>>, wanted: boolean): ResolvedWeightServerOptions | null {
  const given = Object.keys(FIELD_OF_FLAG).filter((flag) => values[flag] !== undefined);
  if (!wanted) {
    if (given.length > 0) throw new ConfigError(`--${given[0]} goes with run weight-sync only`);
    return null;
  }
  const options: Record<string, string> = {};
  for (const flag of given) {
    const value = values[flag];
    if (typeof value !== 'string' || value.trim() === '') throw new ConfigError(`--${flag} needs a value`);
    options[FIELD_OF_FLAG[flag as keyof typeof FIELD_OF_FLAG]] = value;
  }
  return resolveWeightServerOptions(options as WeightServerOptions);
}

/**
 * The weight server of a loop run (`demo`, `learn`) with the llm policy: the stack's own llama.cpp server, which
 * weight sync may restart. Another server (LLM_BASE_URL) is someone else's: its weight sync runs apart
 * (`trialrun run weight-sync --server-kind ...`), so none is returned for it.
 */
export function loopWeightServer(llm: ResolvedLlmPolicyOptions | undefined): WeightServer | undefined {
  if (!llm || llm.baseUrl !== STACK_LLM_URL || llm.server === 'vllm' || llm.server === 'openai') return undefined;
  return weightServerFor(resolveWeightServerOptions({ kind: 'llama.cpp', url: llm.baseUrl, model: llm.model }));
}
