import {
  ConfigError,
  ConnectionError,
  errorMessage,
  resolveRetryOptions,
  TimeoutError,
  TrialrunError,
  withRetries,
  type ResolvedRetryOptions,
  type RetryOptions,
} from '../../schemas/index.js';

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
  if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new ConfigError(`ChatClientOptions.maxTokens must be a whole number >= 1, got ${maxTokens}`);
  return {
    baseUrl,
    apiKey: options.apiKey ?? env.OPENAI_API_KEY ?? null,
    model,
    timeoutMs,
    retry: resolveRetryOptions({ retries: 3, initialDelayMs: 500, maxDelayMs: 10_000, ...options.retry }),
    temperature,
    maxTokens,
    logprobs: options.logprobs ?? true,
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
}

/** A non-retriable answer from the server (bad request, auth, unknown model). */
export class ChatRequestError extends TrialrunError {}

class RetriableHttpError extends ConnectionError {
  constructor(
    message: string,
    readonly retryAfterMs: number | null,
  ) {
    super(message);
  }
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
    logprobs?: { content?: Array<{ logprob?: number }> | null } | null;
  }>;
  usage?: { prompt_tokens?: number; completion_tokens?: number };
}

/** An OpenAI-compatible chat-completions client with function-calling tools, per-attempt timeouts and retries. */
export class ChatClient {
  readonly options: ResolvedChatClientOptions;

  constructor(options: ChatClientOptions = {}) {
    this.options = resolveChatClientOptions(options);
  }

  async complete(messages: readonly ChatMessage[], tools: readonly ChatTool[], signal: AbortSignal = new AbortController().signal): Promise<ChatCompletion> {
    const started = performance.now();
    const body = JSON.stringify({
      model: this.options.model,
      messages: messages.map(toWire),
      ...(tools.length ? { tools: tools.map((t) => ({ type: 'function', function: t })), tool_choice: 'auto' } : {}),
      temperature: this.options.temperature,
      max_tokens: this.options.maxTokens,
      ...(this.options.logprobs ? { logprobs: true } : {}),
    });
    let attempts = 0;
    const wire = await withRetries(
      async () => {
        attempts++;
        return this.post(body, signal);
      },
      this.options.retry,
      signal,
    );
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
    };
  }

  private async post(body: string, signal: AbortSignal): Promise<WireResponse> {
    const url = `${this.options.baseUrl}/chat/completions`;
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}) },
        body,
        signal: AbortSignal.any([signal, AbortSignal.timeout(this.options.timeoutMs)]),
      });
    } catch (error) {
      if (signal.aborted) throw error;
      if (error instanceof DOMException && error.name === 'TimeoutError') throw new TimeoutError(`POST ${url}`, this.options.timeoutMs);
      throw new ConnectionError(`POST ${url} failed: ${errorMessage(error)}`, error);
    }
    const text = await response.text();
    if (response.ok) {
      try {
        return JSON.parse(text) as WireResponse;
      } catch {
        throw new ChatRequestError(`${url} answered with invalid JSON: ${text.slice(0, 200)}`);
      }
    }
    const detail = `POST ${url}: HTTP ${response.status} ${text.slice(0, 300)}`;
    if ([408, 409, 429].includes(response.status) || response.status >= 500) {
      const retryAfter = Number(response.headers.get('retry-after'));
      throw new RetriableHttpError(detail, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : null);
    }
    throw new ChatRequestError(detail);
  }
}
