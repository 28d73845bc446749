import { ConfigError, resolveRetryOptions, wholeNumber, type ResolvedRetryOptions, type RetryOptions } from '../../../schemas/index.js';
import { ChatRequestError, postJson } from '../http.js';

export { ChatRequestError } from '../http.js';

export interface ChatClientOptions {
  /** OpenAI-compatible base URL (vLLM, SGLang and hosted APIs serve `/chat/completions` under it). @default env OPENAI_BASE_URL, else 'http://localhost:8000/v1' */
  baseUrl?: string;
  /** Bearer token. @default env OPENAI_API_KEY, else none */
  apiKey?: string;
  /** Model name sent with every request. @default env TRIALRUN_LLM_MODEL (required one way or the other) */
  model?: string;
  /** Budget for one HTTP attempt. @default 60000 */
  timeoutMs?: number;
  /** Retries for network errors, timeouts, 408/409/429 and 5xx. @default { retries: 3, initialDelayMs: 500, maxDelayMs: 10000 } */
  retry?: RetryOptions;
  /** @default 1 */
  temperature?: number;
  /** @default 1024 */
  maxTokens?: number;
  /** Ask for token logprobs (recorded in trajectories when the server returns them). @default true */
  logprobs?: boolean;
  /** Nucleus sampling mass. @default 1 */
  topP?: number;
  /** 'required' makes the server call a tool every reply (vLLM enforces it with structured outputs). @default 'auto' */
  toolChoice?: 'auto' | 'required';
  /** Ask for the prompt's and the reply's token ids (vLLM's `return_token_ids`; other servers may refuse it). @default false */
  returnTokenIds?: boolean;
}

export interface ResolvedChatClientOptions {
  readonly baseUrl: string;
  readonly apiKey: string | null;
  readonly model: string;
  readonly timeoutMs: number;
  readonly retry: ResolvedRetryOptions;
  readonly temperature: number;
  readonly maxTokens: number;
  readonly logprobs: boolean;
  readonly topP: number;
  readonly returnTokenIds: boolean;
  readonly toolChoice: 'auto' | 'required';
}

export function resolveChatClientOptions(options: ChatClientOptions = {}, env: NodeJS.ProcessEnv = process.env): ResolvedChatClientOptions {
  const model = options.model ?? env.TRIALRUN_LLM_MODEL;
  if (!model) throw new ConfigError('ChatClientOptions.model is required (or set TRIALRUN_LLM_MODEL)');
  const baseUrl = (options.baseUrl ?? env.OPENAI_BASE_URL ?? 'http://localhost:8000/v1').replace(/\/+$/, '');
  if (!/^https?:\/\//.test(baseUrl)) throw new ConfigError(`ChatClientOptions.baseUrl "${baseUrl}" is not an http(s) URL`);
  const timeoutMs = options.timeoutMs ?? 60_000;
  if (!(timeoutMs > 0)) throw new ConfigError(`ChatClientOptions.timeoutMs must be > 0, got ${timeoutMs}`);
  const temperature = options.temperature ?? 1;
  if (!(temperature >= 0 && temperature <= 2)) throw new ConfigError(`ChatClientOptions.temperature must be within 0..2, got ${temperature}`);
  const maxTokens = options.maxTokens ?? 1024;
  wholeNumber('ChatClientOptions.maxTokens', maxTokens, { min: 1 });
  const topP = options.topP ?? 1;
  if (!(topP > 0 && topP <= 1)) throw new ConfigError(`ChatClientOptions.topP must be > 0 and <= 1, got ${topP}`);
  return {
    baseUrl,
    apiKey: options.apiKey ?? env.OPENAI_API_KEY ?? null,
    model,
    timeoutMs,
    retry: resolveRetryOptions({ retries: 3, initialDelayMs: 500, maxDelayMs: 10_000, ...options.retry }),
    temperature,
    maxTokens,
    logprobs: options.logprobs ?? true,
    topP,
    returnTokenIds: options.returnTokenIds ?? false,
    toolChoice: options.toolChoice ?? 'auto',
  };
}

export interface ToolCallRequest {
  readonly id: string;
  readonly name: string;
  /** The raw JSON argument string as the model wrote it. */
  readonly arguments: string;
}

export type ChatMessage =
  | { readonly role: 'system' | 'user'; readonly content: string }
  | { readonly role: 'assistant'; readonly content: string | null; readonly toolCalls?: readonly ToolCallRequest[] }
  | { readonly role: 'tool'; readonly content: string; readonly toolCallId: string };

export interface ChatTool {
  readonly name: string;
  readonly description: string;
  readonly parameters: Record<string, unknown>;
}

export interface ChatCompletion {
  readonly model: string;
  readonly content: string | null;
  readonly toolCalls: readonly ToolCallRequest[];
  readonly finishReason: string | null;
  readonly promptTokens: number | null;
  readonly completionTokens: number | null;
  /** Per-token logprobs of the reply, when the server returned them. */
  readonly logprobs: readonly number[] | null;
  readonly latencyMs: number;
  readonly attempts: number;
  /** The prompt's token ids as the server rendered and tokenised it (with returnTokenIds, where the server gives them). */
  readonly promptTokenIds: readonly number[] | null;
  /** The reply's sampled token ids (likewise). */
  readonly completionTokenIds: readonly number[] | null;
}

const toWire = (message: ChatMessage): Record<string, unknown> => {
  if (message.role === 'tool') return { role: 'tool', content: message.content, tool_call_id: message.toolCallId };
  if (message.role === 'assistant') {
    return {
      role: 'assistant',
      content: message.content,
      ...(message.toolCalls?.length ? { tool_calls: message.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) } : {}),
    };
  }
  return { role: message.role, content: message.content };
};

interface WireResponse {
  model?: string;
  choices?: Array<{
    message?: { content?: string | null; tool_calls?: Array<{ id?: string; function?: { name?: string; arguments?: string } }> };
    finish_reason?: string | null;
    token_ids?: number[] | null;
    logprobs?: { content?: Array<{ logprob?: number }> | null } | null;
  }>;
  usage?: { prompt_tokens?: number; completion_tokens?: number };
  prompt_token_ids?: number[] | null;
}

/** An OpenAI-compatible chat-completions client with function-calling tools, per-attempt timeouts and retries. */
export class ChatClient {
  readonly options: ResolvedChatClientOptions;

  constructor(options: ChatClientOptions = {}) {
    this.options = resolveChatClientOptions(options);
  }

  /** `seed` is sent when given (servers that take none ignore it). */
  async complete(messages: readonly ChatMessage[], tools: readonly ChatTool[], signal: AbortSignal = new AbortController().signal, seed?: number): Promise<ChatCompletion> {
    const started = performance.now();
    const body = {
      model: this.options.model,
      messages: messages.map(toWire),
      ...(tools.length ? { tools: tools.map((t) => ({ type: 'function', function: t })), tool_choice: this.options.toolChoice } : {}),
      temperature: this.options.temperature,
      max_tokens: this.options.maxTokens,
      ...(this.options.topP !== 1 ? { top_p: this.options.topP } : {}),
      ...(seed !== undefined ? { seed } : {}),
      ...(this.options.logprobs ? { logprobs: true } : {}),
      ...(this.options.returnTokenIds ? { return_token_ids: true } : {}),
    };
    const { value: wire, attempts } = await postJson<WireResponse>(`${this.options.baseUrl}/chat/completions`, body, { ...this.options, signal });
    const choice = wire.choices?.[0];
    if (!choice?.message) throw new ChatRequestError(`${this.options.baseUrl} answered without a choice`);
    const logprobs = choice.logprobs?.content?.map((t) => t.logprob ?? Number.NaN).filter(Number.isFinite) ?? null;
    return {
      model: wire.model ?? this.options.model,
      content: choice.message.content ?? null,
      toolCalls: (choice.message.tool_calls ?? []).map((c, i) => ({ id: c.id ?? `call_${i}`, name: c.function?.name ?? '', arguments: c.function?.arguments ?? '{}' })),
      finishReason: choice.finish_reason ?? null,
      promptTokens: wire.usage?.prompt_tokens ?? null,
      completionTokens: wire.usage?.completion_tokens ?? null,
      logprobs: logprobs && logprobs.length ? logprobs : null,
      latencyMs: performance.now() - started,
      attempts,
      promptTokenIds: Array.isArray(wire.prompt_token_ids) ? wire.prompt_token_ids : null,
      completionTokenIds: Array.isArray(choice.token_ids) ? choice.token_ids : null,
    };
  }
}
