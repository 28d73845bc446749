import { createHash } from 'node:crypto';
import { ConfigError, ConnectionError, errorMessage, resolveRetryOptions, withRetries, type LlmCall, type LlmTokens, type ResolvedRetryOptions, type RetryOptions } from '../../../schemas/index.js';
import { ChatRequestError, getJson, postJson } from '../http.js';
import { servedVersionOf } from '../weight-server.js';

/**
 * llama.cpp's native server API (`/completion` with a token-array prompt, `/tokenize`, `/detokenize`,
 * `/apply-template`, `/props`), which is what token-exact trajectories need: the prompt goes in as token
 * ids, and the sampled token ids and their logprobs come back, so nothing the model generated is ever
 * re-tokenised. Its `json_schema` and `grammar` parameters constrain sampling to replies that match a JSON Schema
 * or a GBNF grammar.
 */
export interface LlamaCppClientOptions {
  /** The server's root (not its OpenAI `/v1` base). */
  rootUrl: string;
  /** @default none */
  apiKey?: string | null;
  /** Budget for one HTTP attempt (a completion on a busy CPU takes tens of seconds). @default 120000 */
  timeoutMs?: number;
  /** @default { retries: 3, initialDelayMs: 500, maxDelayMs: 10000 } */
  retry?: RetryOptions;
}

export interface SamplingParams {
  readonly temperature: number;
  readonly topP: number;
  readonly maxTokens: number;
  readonly seed: number;
}

export interface TokenCompletionRequest {
  readonly promptIds: readonly number[];
  readonly sampling: SamplingParams;
  /** Constrains the reply to this JSON Schema (llama.cpp turns it into a grammar). @default unconstrained */
  readonly jsonSchema?: Record<string, unknown>;
  /** Constrains the reply to this GBNF grammar instead (exact, where a schema would leave whitespace free). @default unconstrained */
  readonly grammar?: string;
}

export interface TokenCompletion {
  readonly model: string;
  /** The reply as text (the sampled tokens detokenised by the server, an end-of-generation token excluded). */
  readonly content: string;
  /** Every sampled token, an end-of-generation token included. */
  readonly completionIds: number[];
  /**
   * The logprob of each sampled token under the distribution it was drawn from, one per completion id: the model's
   * logits divided by the temperature over the whole vocabulary (top-k and min-p are off), renormalised only by top-p
   * and a grammar where they apply. At temperature 0 (greedy) the model's own, at temperature 1.
   */
  readonly logprobs: number[];
  /** 'stop' (an end-of-generation token or a stop word) or 'length' (the token limit). */
  readonly finishReason: 'stop' | 'length';
  readonly latencyMs: number;
  readonly attempts: number;
  /** The sampler seed of the completion returned: the request's, or the next one where the server's first answer was inconsistent. */
  readonly seed: number;
}

/**
 * Draws of a completion whose answer lists other probabilities than tokens. llama.cpp did so for 2 of 472 completions
 * under load (learn-6ebdd8f9, post-sampling probabilities, 2 slots); a sample without its logprobs cannot be trained
 * on, so the completion is drawn again with the next seed rather than losing the episode's task.
 */
const INCONSISTENT_ANSWER_DRAWS = 3;

export interface ServerIdentity {
  readonly model: string;
  /** sha256 of the chat template, to tell which rendering produced a prompt's template tokens. */
  readonly chatTemplateSha256: string;
  /** sha256 of the model file path and type the server reports (llama.cpp's tokenizer lives in the GGUF). */
  readonly tokenizer: string;
  readonly slots: number;
  readonly contextTokens: number;
  /** The chat template renders a `tools` list (llama.cpp's `chat_template_caps.supports_tools`); false where the server does not say. */
  readonly supportsTools: boolean;
  /** The end-of-generation token's text (`<|im_end|>`), which a template writes after each reply; null where the server does not say. */
  readonly eosToken: string | null;
}

export interface TemplateMessage {
  readonly role: string;
  readonly content: string;
  /** What templates that render tool calls read (OpenAI's fields, passed through as given). @default none */
  readonly tool_calls?: readonly unknown[];
  /** @default none */
  readonly tool_call_id?: string;
  /** @default none */
  readonly name?: string;
}

interface WireCompletion {
  model?: string;
  content?: string;
  tokens?: number[];
  stop_type?: string;
  /** `logprob` before sampling, or `prob` after it (`post_sampling_probs`). */
  completion_probabilities?: Array<{ id?: number; logprob?: number; prob?: number }>;
}

interface WireProps {
  model_alias?: string;
  model_path?: string;
  model_ftype?: string;
  chat_template?: string;
  total_slots?: number;
  default_generation_settings?: { n_ctx?: number };
  chat_template_caps?: { supports_tools?: boolean };
  eos_token?: string;
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** A completion whose tokens and probabilities disagree: drawn again (INCONSISTENT_ANSWER_DRAWS), then refused. */
class InconsistentAnswerError extends ChatRequestError {}

export class LlamaCppClient {
  readonly rootUrl: string;
  private readonly post: { apiKey: string | null; timeoutMs: number; retry: ResolvedRetryOptions };

  constructor(options: LlamaCppClientOptions) {
    this.rootUrl = options.rootUrl.replace(/\/+$/, '');
    if (!/^https?:\/\//.test(this.rootUrl)) throw new ConfigError(`LlamaCppClientOptions.rootUrl "${options.rootUrl}" is not an http(s) URL`);
    const timeoutMs = options.timeoutMs ?? 120_000;
    if (!(timeoutMs > 0)) throw new ConfigError(`LlamaCppClientOptions.timeoutMs must be > 0, got ${timeoutMs}`);
    this.post = { apiKey: options.apiKey ?? null, timeoutMs, retry: resolveRetryOptions({ retries: 3, initialDelayMs: 500, maxDelayMs: 10_000, ...options.retry }) };
  }

  /**
   * True when a llama.cpp server answers `/props` at the root (how `server: 'auto'` tells llama.cpp from other
   * servers); false when the server answers otherwise (404 there, or props that are not llama.cpp's). A server
   * that cannot be reached or answers 5xx through every retry is a ConnectionError, not another kind: weight sync
   * restarts llama.cpp, and a policy that probed it then took it for an OpenAI server and sampled without its grammar.
   */
  static async probe(rootUrl: string, apiKey: string | null, options: { timeoutMs?: number; retry?: RetryOptions; signal?: AbortSignal } = {}): Promise<boolean> {
    const client = new LlamaCppClient({ rootUrl, apiKey, timeoutMs: options.timeoutMs ?? 5_000, retry: options.retry });
    try {
      const props = await client.props(options.signal);
      return typeof props.chat_template === 'string' && typeof props.default_generation_settings === 'object';
    } catch (error) {
      if (error instanceof ChatRequestError) return false;
      throw error;
    }
  }

  /** `/props`, retried like the POSTs: a server that weight sync restarts refuses connections, then answers 503 while it loads. */
  private props(signal?: AbortSignal): Promise<WireProps> {
    return withRetries(() => getJson<WireProps>(`${this.rootUrl}/props`, { apiKey: this.post.apiKey, timeoutMs: this.post.timeoutMs, signal }), this.post.retry, signal ?? new AbortController().signal);
  }

  async identity(signal?: AbortSignal): Promise<ServerIdentity> {
    const props = await this.props(signal);
    if (typeof props.chat_template !== 'string') throw new ChatRequestError(`${this.rootUrl}/props names no chat_template: not a llama.cpp server with a chat model`);
    return {
      model: props.model_alias ?? props.model_path ?? 'unknown',
      chatTemplateSha256: sha256(props.chat_template),
      tokenizer: `gguf-sha256:${sha256(`${props.model_path ?? ''}\n${props.model_ftype ?? ''}`).slice(0, 16)}`,
      slots: props.total_slots ?? 1,
      contextTokens: props.default_generation_settings?.n_ctx ?? 0,
      supportsTools: props.chat_template_caps?.supports_tools === true,
      eosToken: typeof props.eos_token === 'string' && props.eos_token !== '' ? props.eos_token : null,
    };
  }

  /** The chat template's rendering of `messages` (and `tools`, where the template lists them), ending with the assistant's generation prompt. */
  async applyTemplate(messages: readonly TemplateMessage[], signal?: AbortSignal, tools?: readonly unknown[]): Promise<string> {
    const { value } = await postJson<{ prompt?: unknown }>(`${this.rootUrl}/apply-template`, { messages, ...(tools && tools.length > 0 ? { tools } : {}) }, { ...this.post, signal });
    if (typeof value.prompt !== 'string') throw new ChatRequestError(`${this.rootUrl}/apply-template answered without a prompt`);
    return value.prompt;
  }

  /** Token ids of text that may hold the template's special tokens (`<|im_start|>`); `addSpecial` adds a BOS where the model wants one. */
  async tokenize(text: string, addSpecial: boolean, signal?: AbortSignal): Promise<number[]> {
    const { value } = await postJson<{ tokens?: unknown }>(`${this.rootUrl}/tokenize`, { content: text, add_special: addSpecial, parse_special: true }, { ...this.post, signal });
    if (!Array.isArray(value.tokens) || !value.tokens.every((t) => Number.isInteger(t))) throw new ChatRequestError(`${this.rootUrl}/tokenize answered without token ids`);
    return value.tokens as number[];
  }

  async detokenize(ids: readonly number[], signal?: AbortSignal): Promise<string> {
    const { value } = await postJson<{ content?: unknown }>(`${this.rootUrl}/detokenize`, { tokens: ids }, { ...this.post, signal });
    if (typeof value.content !== 'string') throw new ChatRequestError(`${this.rootUrl}/detokenize answered without content`);
    return value.content;
  }

  /** Samples a completion of a token-id prompt; the reply's token ids and one logprob per token come back. */
  async complete(request: TokenCompletionRequest, signal?: AbortSignal): Promise<TokenCompletion> {
    if (request.jsonSchema !== undefined && request.grammar !== undefined) throw new ConfigError('a completion takes a JSON Schema or a grammar, not both');
    for (let draw = 1; ; draw++) {
      const seed = request.sampling.seed + draw - 1;
      try {
        return await this.completeOnce(request, seed, signal);
      } catch (error) {
        if (!(error instanceof InconsistentAnswerError) || draw >= INCONSISTENT_ANSWER_DRAWS) throw error;
      }
    }
  }

  /**
   * `complete`, streamed: `onText` gets each sampled token's text as the server sends it. Connecting is retried like
   * a POST; once text has gone out the completion cannot be drawn again, so an answer whose probabilities do not
   * match its tokens is a ChatRequestError here.
   */
  async completeStreaming(request: TokenCompletionRequest, onText: (text: string) => void, signal?: AbortSignal): Promise<TokenCompletion> {
    if (request.jsonSchema !== undefined && request.grammar !== undefined) throw new ConfigError('a completion takes a JSON Schema or a grammar, not both');
    const started = performance.now();
    const seed = request.sampling.seed;
    const postSampling = request.sampling.temperature > 0;
    const url = `${this.rootUrl}/completion`;
    const attemptSignal = (): AbortSignal => AbortSignal.any([signal ?? new AbortController().signal, AbortSignal.timeout(this.post.timeoutMs)]);
    let attempts = 0;
    const response = await withRetries(
      async () => {
        attempts++;
        const answer = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(this.post.apiKey ? { authorization: `Bearer ${this.post.apiKey}` } : {}) },
          body: JSON.stringify({ ...this.completionBody(request, seed), stream: true }),
          signal: attemptSignal(),
        }).catch((error: unknown) => {
          if (signal?.aborted) throw error;
          throw new ConnectionError(`POST ${url} failed: ${errorMessage(error)}`, error);
        });
        if (answer.status >= 500 || answer.status === 429) throw new ConnectionError(`POST ${url}: HTTP ${answer.status}`);
        if (!answer.ok || !answer.body) throw new ChatRequestError(`POST ${url}: HTTP ${answer.status} ${(await answer.text()).slice(0, 200)}`);
        return answer;
      },
      this.post.retry,
      signal ?? new AbortController().signal,
    );
    const completionIds: number[] = [];
    const logprobs: number[] = [];
    let content = '';
    let model = 'unknown';
    let stopType: string | undefined;
    const decoder = new TextDecoder();
    let buffered = '';
    const onEvent = (data: string): void => {
      let event: WireCompletion & { stop?: boolean };
      try {
        event = JSON.parse(data) as WireCompletion & { stop?: boolean };
      } catch {
        throw new ChatRequestError(`${url} streamed an event that is not JSON: ${data.slice(0, 200)}`);
      }
      const ids = event.tokens ?? [];
      const probabilities = event.completion_probabilities ?? [];
      if (probabilities.length !== ids.length || probabilities.some((p, i) => p.id !== ids[i] || typeof (postSampling ? p.prob : p.logprob) !== 'number')) {
        throw new ChatRequestError(`${url} streamed ${ids.length} tokens with ${probabilities.length} probabilities that do not match them`);
      }
      completionIds.push(...ids);
      logprobs.push(...probabilities.map((p) => (postSampling ? Math.log(p.prob!) : p.logprob!)));
      if (event.content) {
        content += event.content;
        onText(event.content);
      }
      if (event.stop) {
        model = event.model ?? model;
        stopType = event.stop_type;
      }
    };
    for await (const part of response.body! as unknown as AsyncIterable<Uint8Array>) {
      buffered += decoder.decode(part, { stream: true });
      let end: number;
      while ((end = buffered.indexOf('\n\n')) >= 0) {
        const event = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        for (const line of event.split('\n')) if (line.startsWith('data: ')) onEvent(line.slice('data: '.length));
      }
    }
    if (stopType === undefined) throw new ConnectionError(`${url}: the stream ended before its last event`);
    return { model, content, completionIds, logprobs, finishReason: stopType === 'limit' ? 'length' : 'stop', latencyMs: performance.now() - started, attempts, seed };
  }

  /** `/completion`'s body: the token-array prompt and pure temperature (and top-p) sampling, with one probability per sampled token. */
  private completionBody(request: TokenCompletionRequest, seed: number): Record<string, unknown> {
    const postSampling = request.sampling.temperature > 0;
    return {
      prompt: request.promptIds,
      n_predict: request.sampling.maxTokens,
      temperature: request.sampling.temperature,
      top_p: request.sampling.topP,
      seed,
      // Pure temperature sampling (and top-p where asked): llama.cpp's default top-k 40 and min-p 0.05 would cut the
      // distribution in ways the learner does not model, whose ratio divides the logits by the temperature alone.
      top_k: 0,
      min_p: 0,
      // One probability per sampled token, after the sampler chain: its probability under logits / temperature,
      // what the learner's ratio compares with (greedy decoding has none worth recording, so the model's own then).
      n_probs: 1,
      post_sampling_probs: postSampling,
      return_tokens: true,
      // The slot keeps the previous turn's KV cache: only the appended tokens are evaluated.
      cache_prompt: true,
      ...(request.jsonSchema ? { json_schema: request.jsonSchema } : {}),
      ...(request.grammar ? { grammar: request.grammar } : {}),
    };
  }

  private async completeOnce(request: TokenCompletionRequest, seed: number, signal?: AbortSignal): Promise<TokenCompletion> {
    const started = performance.now();
    const postSampling = request.sampling.temperature > 0;
    const { value, attempts } = await postJson<WireCompletion>(`${this.rootUrl}/completion`, this.completionBody(request, seed), { ...this.post, signal });
    const completionIds = value.tokens;
    if (!Array.isArray(completionIds) || typeof value.content !== 'string') throw new ChatRequestError(`${this.rootUrl}/completion answered without tokens and content`);
    const probabilities = value.completion_probabilities ?? [];
    const logprobOf = (p: { logprob?: number; prob?: number }): number | undefined => (postSampling ? (typeof p.prob === 'number' ? Math.log(p.prob) : undefined) : p.logprob);
    if (probabilities.length !== completionIds.length || probabilities.some((p, i) => p.id !== completionIds[i] || typeof logprobOf(p) !== 'number')) {
      throw new InconsistentAnswerError(`${this.rootUrl}/completion answered ${completionIds.length} tokens but ${probabilities.length} logprobs that do not match them`);
    }
    return {
      model: value.model ?? 'unknown',
      content: value.content,
      completionIds,
      logprobs: probabilities.map((p) => logprobOf(p)!),
      finishReason: value.stop_type === 'limit' ? 'length' : 'stop',
      latencyMs: performance.now() - started,
      attempts,
      seed,
    };
  }
}

/** What a token-exact call record holds beyond the completion itself. */
export interface TokenCallContext {
  /** The prompt's tokens as sent: what was appended to the sequence, its length, and whether it extends the previous call. */
  readonly tokens: Omit<LlmTokens, 'completionIds'>;
  readonly sampling: SamplingParams;
  readonly identity: ServerIdentity;
  /** The reply was sampled under a grammar or JSON Schema. */
  readonly constrained: boolean;
  /** The reply as the transcript holds it: a reply whose opening was given includes it. @default completion.content */
  readonly reply?: string;
}

/**
 * The token-exact `LlmCall` record of one completion: the one shape the built-in llm policy and the gateway both
 * write, so a trajectory's turns read the same whoever drove the model.
 */
export function tokenCompletionCall(completion: TokenCompletion, context: TokenCallContext): LlmCall {
  return {
    model: completion.model,
    content: context.reply ?? completion.content,
    finishReason: completion.finishReason,
    promptTokens: context.tokens.promptLength,
    completionTokens: completion.completionIds.length,
    logprobs: completion.logprobs,
    latencyMs: completion.latencyMs,
    attempts: completion.attempts,
    tokens: { ...context.tokens, completionIds: completion.completionIds },
    // The seed the reply was drawn with (the server's first answer may have been drawn again with the next).
    sampling: { ...context.sampling, seed: completion.seed },
    tokenizer: context.identity.tokenizer,
    chatTemplateSha256: context.identity.chatTemplateSha256,
    // The version the server says produced this reply (weight sync names it in the model), not the one asked for.
    policyVersion: servedVersionOf(completion.model),
    constrained: context.constrained,
    invalidReply: null,
  };
}

/**
 * The GGUF file a llama.cpp server loads, as its `/props` reports it (`model_path`); null when the server
 * answers without one (not llama.cpp: no such field, no /props, or no JSON there). An unreachable server or a 5xx is
 * a ConnectionError.
 */
export async function servedModelPath(rootUrl: string): Promise<string | null> {
  const root = rootUrl.replace(/\/+$/, '');
  try {
    const props = await getJson<{ model_path?: unknown }>(`${root}/props`, { timeoutMs: 10_000 });
    return typeof props.model_path === 'string' ? props.model_path : null;
  } catch (error) {
    if (error instanceof ChatRequestError) return null;
    throw error;
  }
}
