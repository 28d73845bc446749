import { CHAT_SERVER_KINDS, type ChatServerKind } from '../../connectors/llm/index.js';
import { ConfigError, STACK_LLM_MODEL, STACK_LLM_URL, wholeNumber } from '../../schemas/index.js';

/** The model server kinds the llm policy speaks to (connectors/llm's, probed in their order by 'auto'; docs/llm.md says what each supports). */
export const LLM_SERVER_KINDS: readonly LlmServerKind[] = ['auto', ...CHAT_SERVER_KINDS];
export type LlmServerKind = 'auto' | ChatServerKind;

/**
 * How the model acts. 'agent': it calls any of the environment's tools, every turn. 'repair-script'
 * (program-repair/v1 only): the repair script the scripted policies share runs the tests, lists the candidate
 * edits, re-runs the tests after an edit, reverts or submits, and the model makes the one choice they learn,
 * which untried edit to apply, its reply constrained to an apply_edit call of one of their ids.
 */
export const LLM_SCAFFOLDS = ['agent', 'repair-script'] as const;
export type LlmScaffold = (typeof LLM_SCAFFOLDS)[number];

export interface LlmPolicyOptions {
  /** OpenAI-compatible base URL (ends in /v1 for llama.cpp, vLLM, SGLang). @default env LLM_BASE_URL, else the stack's server STACK_LLM_URL */
  baseUrl?: string;
  /** The model name sent with each request. @default env LLM_MODEL, else STACK_LLM_MODEL */
  model?: string;
  /** Name of the environment variable holding the API key; a key is sent only when it is set. @default 'LLM_API_KEY' */
  apiKeyEnv?: string;
  /**
   * 'llama.cpp': token ids in and out through its native /completion, with constrained decoding;
   * 'vllm': chat completions with function calling and `return_token_ids` (token ids recorded, not appended by us);
   * 'openai': chat completions with function calling, no token ids (a hosted API, SGLang's OpenAI endpoint);
   * 'auto': llama.cpp when the server answers llama.cpp's /props, vllm when it answers vLLM's /version, else openai. @default 'auto'
   */
  server?: LlmServerKind;
  /** @default 0.7 */
  temperature?: number;
  /** Nucleus sampling mass, in (0, 1]. @default 0.95 */
  topP?: number;
  /** Completion tokens per model turn. @default 256 */
  maxTokensPerTurn?: number;
  /** Sampler seed for every turn. @default none: each turn's seed is drawn from the episode's seeded random stream, so an episode replays from its trajectory id */
  seed?: number;
  /** Episodes a rollout worker (or an evaluation) runs at once; match the server's slots. @default 2 */
  concurrentEpisodes?: number;
  /** Tokens an episode's sequence may reach (prompt and completions); the episode submits before a turn would pass it. Keep it within the server's context per slot. @default 4096 */
  maxEpisodeTokens?: number;
  /** Wall-clock budget of an episode's model turns; the episode submits once it is spent. @default 600000 */
  maxEpisodeMs?: number;
  /** Constrain decoding to valid calls of the environment's tools where the server can (llama.cpp json_schema). @default true */
  constrained?: boolean;
  /** Characters of a tool result shown to the model (head and tail kept). @default 2000 */
  maxToolResultChars?: number;
  /** Budget for one HTTP attempt. @default 180000 */
  requestTimeoutMs?: number;
  /** How the model acts: every tool call itself, or the repair script's edit choice (LLM_SCAFFOLDS). @default 'agent' */
  scaffold?: LlmScaffold;
}

export type ResolvedLlmPolicyOptions = Required<Omit<LlmPolicyOptions, 'seed' | 'apiKeyEnv'>> & {
  readonly seed: number | null;
  readonly apiKey: string | null;
  readonly apiKeyEnv: string;
};

const whole = (name: string, value: number, min: number): number => wholeNumber(`LlmPolicyOptions.${name}`, value, { min });

/** Every option checked, with its default; a bad value or combination is a ConfigError naming it. */
export function resolveLlmPolicyOptions(options: LlmPolicyOptions = {}, env: NodeJS.ProcessEnv = process.env): ResolvedLlmPolicyOptions {
  const baseUrl = (options.baseUrl ?? env.LLM_BASE_URL ?? STACK_LLM_URL).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]/.test(baseUrl)) throw new ConfigError(`LlmPolicyOptions.baseUrl "${baseUrl}" is not an http(s) URL`);
  const model = options.model ?? env.LLM_MODEL ?? STACK_LLM_MODEL;
  if (model.trim() === '') throw new ConfigError('LlmPolicyOptions.model is empty');
  const apiKeyEnv = options.apiKeyEnv ?? 'LLM_API_KEY';
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(apiKeyEnv)) throw new ConfigError(`LlmPolicyOptions.apiKeyEnv must name an environment variable, got "${apiKeyEnv}"`);
  if (options.apiKeyEnv !== undefined && !env[apiKeyEnv]) throw new ConfigError(`LlmPolicyOptions.apiKeyEnv names ${apiKeyEnv}, which is not set`);
  const server = options.server ?? 'auto';
  if (!LLM_SERVER_KINDS.includes(server)) throw new ConfigError(`LlmPolicyOptions.server must be one of ${LLM_SERVER_KINDS.join(', ')}, got "${server}"`);
  const temperature = options.temperature ?? 0.7;
  if (!(temperature >= 0 && temperature <= 2)) throw new ConfigError(`LlmPolicyOptions.temperature must be within 0..2, got ${temperature}`);
  const topP = options.topP ?? 0.95;
  if (!(topP > 0 && topP <= 1)) throw new ConfigError(`LlmPolicyOptions.topP must be > 0 and <= 1, got ${topP}`);
  const maxTokensPerTurn = whole('maxTokensPerTurn', options.maxTokensPerTurn ?? 256, 1);
  const maxEpisodeTokens = whole('maxEpisodeTokens', options.maxEpisodeTokens ?? 4096, 1);
  // The first turn's prompt (instructions, tools, task) takes several hundred tokens before any reply.
  if (maxEpisodeTokens < 2 * maxTokensPerTurn) throw new ConfigError(`LlmPolicyOptions.maxEpisodeTokens (${maxEpisodeTokens}) must be at least twice LlmPolicyOptions.maxTokensPerTurn (${maxTokensPerTurn}), or no turn fits beside the prompt`);
  const seed = options.seed ?? null;
  if (seed !== null) whole('seed', seed, 0);
  const maxEpisodeMs = whole('maxEpisodeMs', options.maxEpisodeMs ?? 600_000, 1);
  const requestTimeoutMs = whole('requestTimeoutMs', options.requestTimeoutMs ?? 180_000, 1);
  const scaffold = options.scaffold ?? 'agent';
  if (!LLM_SCAFFOLDS.includes(scaffold)) throw new ConfigError(`LlmPolicyOptions.scaffold must be one of ${LLM_SCAFFOLDS.join(', ')}, got "${scaffold}"`);
  return {
    baseUrl,
    model,
    apiKeyEnv,
    apiKey: env[apiKeyEnv] || null,
    server,
    temperature,
    topP,
    maxTokensPerTurn,
    seed,
    concurrentEpisodes: whole('concurrentEpisodes', options.concurrentEpisodes ?? 2, 1),
    maxEpisodeTokens,
    maxEpisodeMs,
    constrained: options.constrained ?? true,
    maxToolResultChars: whole('maxToolResultChars', options.maxToolResultChars ?? 2000, 100),
    requestTimeoutMs,
    scaffold,
  };
}
