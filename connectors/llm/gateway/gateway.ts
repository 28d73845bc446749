import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, errorMessage, STACK_LLM_URL, type LlmCall, type RetryOptions } from '../../../schemas/index.js';
import { LlamaCppClient, tokenCompletionCall, type ServerIdentity } from '../llama-cpp/index.js';
import { EpisodeSequence } from './sequence.js';
import { BadRequest, errorBody, messageText, parseChatRequest, parseToolCalls, SSE_DONE, sseEvent, templateMessages, type ChatCompletionRequest, type WireMessage } from './wire.js';

/**
 * An OpenAI-compatible door to the model server for agent harnesses that run unchanged, one route per episode with
 * its own key. Every call is rendered through the chat template here and sampled token-in/token-out on the server
 * (llama.cpp's native API), so it becomes the same token-exact `LlmCall` record the built-in LLM policy writes.
 */
export interface LlmGatewayOptions {
  /** The model server's OpenAI base URL (its root is this without `/v1`). @default env LLM_BASE_URL, else the stack's server STACK_LLM_URL */
  baseUrl?: string;
  /** Bearer key for the model server. @default env LLM_API_KEY, else none */
  upstreamApiKey?: string | null;
  /** Interface the gateway listens on. @default '127.0.0.1' */
  host?: string;
  /** Port the gateway listens on (0: a free one). @default 0 */
  port?: number;
  /** Host name routes are advertised under (what an agent dials), where it is not `host`. @default host */
  advertisedHost?: string;
  /** Budget for one upstream request. @default 120000 */
  requestTimeoutMs?: number;
  /** Completion tokens per call when the request names none. @default 256 */
  defaultMaxTokens?: number;
  /** @default { retries: 3, initialDelayMs: 500, maxDelayMs: 10000 } */
  retry?: RetryOptions;
}

export interface ResolvedLlmGatewayOptions {
  readonly baseUrl: string;
  readonly upstreamApiKey: string | null;
  readonly host: string;
  readonly port: number;
  readonly advertisedHost: string;
  readonly requestTimeoutMs: number;
  readonly defaultMaxTokens: number;
  readonly retry: RetryOptions | undefined;
}

export function resolveLlmGatewayOptions(options: LlmGatewayOptions = {}, env: NodeJS.ProcessEnv = process.env): ResolvedLlmGatewayOptions {
  const baseUrl = (options.baseUrl ?? env.LLM_BASE_URL ?? STACK_LLM_URL).replace(/\/+$/, '');
  if (!/^https?:\/\//.test(baseUrl)) throw new ConfigError(`LlmGatewayOptions.baseUrl "${baseUrl}" is not an http(s) URL`);
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new ConfigError(`LlmGatewayOptions.port must be an integer in 0..65535, got ${port}`);
  const requestTimeoutMs = options.requestTimeoutMs ?? 120_000;
  if (!(requestTimeoutMs > 0)) throw new ConfigError(`LlmGatewayOptions.requestTimeoutMs must be > 0, got ${requestTimeoutMs}`);
  const defaultMaxTokens = options.defaultMaxTokens ?? 256;
  if (!Number.isInteger(defaultMaxTokens) || defaultMaxTokens < 1) throw new ConfigError(`LlmGatewayOptions.defaultMaxTokens must be an integer >= 1, got ${defaultMaxTokens}`);
  return { baseUrl, upstreamApiKey: options.upstreamApiKey ?? env.LLM_API_KEY ?? null, host, port, advertisedHost: options.advertisedHost ?? host, requestTimeoutMs, defaultMaxTokens, retry: options.retry };
}

/** What one episode may spend through its route. */
export interface EpisodeBudget {
  /** Chat completions. @default 32 */
  maxCalls?: number;
  /** Tokens recorded over the episode: each call's appended prompt tokens and its completion tokens. @default 16384 */
  maxTokens?: number;
  /** Wall time from open to the last answer. @default 600000 */
  maxWallMs?: number;
}

export interface ResolvedEpisodeBudget {
  readonly maxCalls: number;
  readonly maxTokens: number;
  readonly maxWallMs: number;
}

export function resolveEpisodeBudget(budget: EpisodeBudget = {}): ResolvedEpisodeBudget {
  const resolved = { maxCalls: budget.maxCalls ?? 32, maxTokens: budget.maxTokens ?? 16_384, maxWallMs: budget.maxWallMs ?? 600_000 };
  for (const [name, value] of Object.entries(resolved)) if (!Number.isInteger(value) || value < 1) throw new ConfigError(`EpisodeBudget.${name} must be an integer >= 1, got ${value}`);
  return resolved;
}

/** What a route tells its opener as the episode goes (an environment whose agent is a program steps on these). */
export interface RouteEvents {
  /**
   * A call was answered and recorded: its record, and the text the harness sent since the model's previous reply
   * (the messages after the request's last assistant message: what the agent made of that reply). @default none
   */
  onCall?: (call: LlmCall, sentSinceReply: string) => void;
  /** A call was refused because the episode's budget is spent (HTTP 429): what was spent. @default none */
  onBudgetSpent?: (what: string) => void;
}

/** An episode's way in: what its agent is given (OPENAI_BASE_URL / OPENAI_API_KEY), and its records when it ends. */
export interface GatewayRoute {
  readonly episodeId: string;
  /** The route's OpenAI base URL (ends in /v1). */
  readonly baseUrl: string;
  readonly apiKey: string;
  /** Ends the route (a call in flight is cut off, later ones are refused with 410) and gives the episode's calls in order. */
  close(): Promise<LlmCall[]>;
}

/** An HTTP status and OpenAI error, answered as is. */
class GatewayRefusal extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string,
    readonly code: string,
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest();

/** How many ended routes still answer 410 (not 404) to their key; older ones are forgotten. */
const ENDED_ROUTES_KEPT = 4096;

interface Route {
  readonly id: string;
  readonly keyHash: Buffer;
  readonly budget: ResolvedEpisodeBudget;
  readonly openedAt: number;
  readonly sequence: EpisodeSequence;
  readonly calls: LlmCall[];
  /** The text each reply the gateway sent as tool calls was sampled as, by call id (to render it back verbatim). */
  readonly sampledByCallId: Map<string, string>;
  readonly events: RouteEvents;
  tokensUsed: number;
  callsStarted: number;
  /** Calls of one episode run one at a time, in arrival order: the sequence is one line. */
  queue: Promise<unknown>;
  readonly ended: AbortController;
}

export class LlmGateway {
  private readonly routes = new Map<string, Route>();
  private readonly ended = new Map<string, Buffer>();
  private constructor(
    readonly options: ResolvedLlmGatewayOptions,
    private readonly server: Server,
    private readonly client: LlamaCppClient,
    readonly identity: ServerIdentity,
    private readonly eosId: number | null,
    /** The gateway's own root, as agents dial it. */
    readonly url: string,
  ) {}

  /**
   * Starts a gateway in front of `options.baseUrl`. The server must offer llama.cpp's token-in/token-out API (`/props`
   * with a chat template, `/apply-template`, `/tokenize`, `/completion` with a token-array prompt and `return_tokens`):
   * one that does not is a ConfigError, since its calls could not be recorded token-exact.
   */
  static async start(options: LlmGatewayOptions = {}): Promise<LlmGateway> {
    const resolved = resolveLlmGatewayOptions(options);
    const root = resolved.baseUrl.replace(/\/v1$/, '');
    if (!(await LlamaCppClient.probe(root, resolved.upstreamApiKey, { retry: resolved.retry }))) {
      throw new ConfigError(`LlmGatewayOptions.baseUrl ${resolved.baseUrl}: the server offers no token-in/token-out API (llama.cpp's /props, /apply-template, /tokenize, /completion); the gateway records only token-exact calls`);
    }
    const client = new LlamaCppClient({ rootUrl: root, apiKey: resolved.upstreamApiKey, timeoutMs: resolved.requestTimeoutMs, retry: resolved.retry });
    const identity = await client.identity();
    const eosIds = identity.eosToken === null ? [] : await client.tokenize(identity.eosToken, false);
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(resolved.port, resolved.host, () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    const host = resolved.advertisedHost.includes(':') ? `[${resolved.advertisedHost}]` : resolved.advertisedHost;
    const gateway = new LlmGateway(resolved, server, client, identity, eosIds.length === 1 ? eosIds[0]! : null, `http://${host}:${port}`);
    server.on('request', (req, res) => void gateway.handle(req, res));
    return gateway;
  }

  /** Opens an episode's route with its own key and budget. */
  open(budget: EpisodeBudget = {}, events: RouteEvents = {}): GatewayRoute {
    const id = randomBytes(9).toString('base64url');
    const apiKey = `tr-${randomBytes(24).toString('base64url')}`;
    const route: Route = {
      id,
      keyHash: sha256(apiKey),
      budget: resolveEpisodeBudget(budget),
      openedAt: performance.now(),
      sequence: new EpisodeSequence(this.client, this.identity.eosToken),
      calls: [],
      sampledByCallId: new Map(),
      events,
      tokensUsed: 0,
      callsStarted: 0,
      queue: Promise.resolve(),
      ended: new AbortController(),
    };
    this.routes.set(id, route);
    return {
      episodeId: id,
      baseUrl: `${this.url}/e/${id}/v1`,
      apiKey,
      close: async () => {
        if (this.routes.get(id) === route) {
          this.routes.delete(id);
          this.ended.set(id, route.keyHash);
          if (this.ended.size > ENDED_ROUTES_KEPT) this.ended.delete(this.ended.keys().next().value!);
          route.ended.abort();
        }
        await route.queue;
        return [...route.calls];
      },
    };
  }

  /** Stops listening; open routes end as if closed. */
  async stop(): Promise<void> {
    for (const route of this.routes.values()) route.ended.abort();
    this.routes.clear();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // A client that hangs up mid-answer must not bring the gateway down; its call is still recorded (it was sampled),
    // and a harness that retries it is seen as drift.
    res.on('error', () => {});
    try {
      const url = new URL(req.url ?? '/', 'http://gateway');
      const match = /^\/e\/([A-Za-z0-9_-]+)\/v1\/(chat\/completions|models)$/.exec(url.pathname);
      if (!match) throw new GatewayRefusal(404, `no such route: ${url.pathname} (a route is /e/<episode>/v1/...)`, 'invalid_request_error', 'not_found');
      const route = this.authorise(match[1]!, req.headers.authorization);
      if (match[2] === 'models') {
        if (req.method !== 'GET') throw new GatewayRefusal(405, `${req.method} /v1/models: use GET`, 'invalid_request_error', 'method_not_allowed');
        return send(res, 200, { object: 'list', data: [{ id: this.identity.model, object: 'model', created: 0, owned_by: 'trialrun' }] });
      }
      if (req.method !== 'POST') throw new GatewayRefusal(405, `${req.method} /v1/chat/completions: use POST`, 'invalid_request_error', 'method_not_allowed');
      const raw = await readBody(req);
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        throw new GatewayRefusal(400, 'the body is not JSON', 'invalid_request_error', 'invalid_json');
      }
      await this.complete(route, parseChatRequest(body), res);
    } catch (error) {
      if (res.headersSent) {
        // A stream already under way ends with the error as its last event (OpenAI's clients raise it).
        const refusal = error instanceof GatewayRefusal ? error : new GatewayRefusal(502, `the model server failed: ${errorMessage(error)}`, 'server_error', 'upstream_error');
        res.end(sseEvent(errorBody(refusal.message, refusal.type, refusal.code, refusal.param)));
        return;
      }
      if (error instanceof BadRequest) return send(res, 400, errorBody(error.message, 'invalid_request_error', 'invalid_value', error.param));
      if (error instanceof GatewayRefusal) return send(res, error.status, errorBody(error.message, error.type, error.code, error.param), error.status === 429 ? { 'x-should-retry': 'false' } : {});
      send(res, 502, errorBody(`the model server failed: ${errorMessage(error)}`, 'server_error', 'upstream_error'));
    }
  }

  /** The open route a key belongs to; no answer ever says anything about another episode beyond that the key is not this route's. */
  private authorise(id: string, authorization: string | undefined): Route {
    const key = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
    if (!key) throw new GatewayRefusal(401, 'no API key: send Authorization: Bearer <the episode\'s key>', 'invalid_request_error', 'missing_api_key');
    const hash = sha256(key);
    const route = this.routes.get(id);
    const known = route?.keyHash ?? this.ended.get(id);
    if (!known || !timingSafeEqual(known, hash)) throw new GatewayRefusal(401, 'the API key is not this route\'s (each episode has its own route and key)', 'invalid_request_error', 'invalid_api_key');
    if (!route) throw new GatewayRefusal(410, 'this episode has ended: its route takes no more calls', 'invalid_request_error', 'episode_ended');
    return route;
  }

  private complete(route: Route, request: ChatCompletionRequest, res: ServerResponse): Promise<void> {
    const run = route.queue.then(() => this.completeInOrder(route, request, res)).catch((error: unknown) => {
      if (error instanceof GatewayRefusal && error.code === 'episode_budget_exhausted') route.events.onBudgetSpent?.(error.message);
      throw error;
    });
    route.queue = run.catch(() => {});
    return run;
  }

  private async completeInOrder(route: Route, request: ChatCompletionRequest, res: ServerResponse): Promise<void> {
    if (route.ended.signal.aborted) throw new GatewayRefusal(410, 'this episode has ended: its route takes no more calls', 'invalid_request_error', 'episode_ended');
    const { budget } = route;
    const left = budget.maxWallMs - (performance.now() - route.openedAt);
    if (left <= 0) throw budgetRefusal(`its wall time (${budget.maxWallMs} ms)`);
    if (route.callsStarted >= budget.maxCalls) throw budgetRefusal(`its calls (${budget.maxCalls})`);
    if (route.tokensUsed >= budget.maxTokens) throw budgetRefusal(`its tokens (${budget.maxTokens})`);
    const wallTimeout = AbortSignal.timeout(Math.ceil(left));
    const signal = AbortSignal.any([route.ended.signal, wallTimeout]);
    const cutOff = (error: unknown): never => {
      if (route.ended.signal.aborted) throw new GatewayRefusal(410, 'this episode ended during the call', 'invalid_request_error', 'episode_ended');
      if (wallTimeout.aborted) throw budgetRefusal(`its wall time (${budget.maxWallMs} ms) during the call`);
      throw error;
    };
    route.callsStarted++;
    const started = performance.now();
    const tools = request.tool_choice === 'none' ? [] : (request.tools ?? []);
    const messages = templateMessages({ ...request, tools }, this.identity.supportsTools, (message) => sampledText(route, message));
    const rendered = await this.client.applyTemplate(messages, signal, this.identity.supportsTools ? tools : undefined).catch(cutOff);
    const { promptIds, tokens } = await route.sequence.prompt(rendered, signal).catch(cutOff);
    const room = Math.min(budget.maxTokens - route.tokensUsed - tokens.appendedPromptIds.length, this.identity.contextTokens > 0 ? this.identity.contextTokens - promptIds.length : Number.POSITIVE_INFINITY);
    if (room < 1) throw budgetRefusal(`its tokens (${budget.maxTokens}, or the server's context of ${this.identity.contextTokens}): this prompt of ${promptIds.length} tokens leaves none to sample`);
    const sampling = {
      temperature: request.temperature ?? 1,
      topP: request.top_p ?? 1,
      maxTokens: Math.min(request.max_completion_tokens ?? request.max_tokens ?? this.options.defaultMaxTokens, room),
      seed: request.seed ?? randomBytes(4).readUInt32BE() % 2 ** 31,
    };
    const stream = request.stream === true;
    const id = `chatcmpl-${randomBytes(12).toString('hex')}`;
    const created = Math.floor(Date.now() / 1000);
    if (stream) {
      // The role chunk goes out at once: a harness sees the call under way while the server samples.
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
      res.write(sseEvent(chunk(id, created, this.identity.model, { role: 'assistant', content: '' }, null)));
    }
    // Streamed token by token, but for a reply that may yet be a tool call: that is held until it is one or is not.
    const held = stream ? new HeldText(tools.length > 0, (text) => res.write(sseEvent(chunk(id, created, this.identity.model, { content: text }, null)))) : null;
    const completion = await (held ? this.client.completeStreaming({ promptIds, sampling }, (text) => held.add(text), signal) : this.client.complete({ promptIds, sampling }, signal)).catch(cutOff);
    const reply = completion.content;
    const endedWithEos = completion.finishReason === 'stop' && this.eosId !== null && completion.completionIds.at(-1) === this.eosId;
    route.sequence.advance(rendered, promptIds, reply, completion.completionIds, endedWithEos);
    route.tokensUsed += tokens.appendedPromptIds.length + completion.completionIds.length;
    const call = tokenCompletionCall(completion, { tokens, sampling, identity: this.identity, constrained: false });
    route.calls.push(call);
    route.events.onCall?.(call, sentSinceReply(request.messages));
    const toolCalls = completion.finishReason === 'stop' ? parseToolCalls(reply, tools) : null;
    for (const c of toolCalls ?? []) route.sampledByCallId.set(c.id, reply);
    const finishReason = toolCalls ? 'tool_calls' : completion.finishReason;
    const usage = { prompt_tokens: promptIds.length, completion_tokens: completion.completionIds.length, total_tokens: promptIds.length + completion.completionIds.length };
    const wireCalls = toolCalls?.map((c, index) => ({ index, id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } }));
    const gatewayMs = performance.now() - started - completion.latencyMs;
    if (stream) {
      if (toolCalls) res.write(sseEvent(chunk(id, created, completion.model, { tool_calls: wireCalls }, null)));
      else held!.flush();
      res.write(sseEvent(chunk(id, created, completion.model, {}, finishReason)));
      if (request.stream_options?.include_usage) res.write(sseEvent({ id, object: 'chat.completion.chunk', created, model: completion.model, choices: [], usage }));
      res.end(SSE_DONE);
      return;
    }
    send(
      res,
      200,
      {
        id,
        object: 'chat.completion',
        created,
        model: completion.model,
        choices: [{ index: 0, message: { role: 'assistant', content: toolCalls ? null : reply, ...(toolCalls ? { tool_calls: wireCalls } : {}) }, finish_reason: finishReason, logprobs: null }],
        usage,
      },
      { 'x-trialrun-gateway-ms': gatewayMs.toFixed(1) },
    );
  }
}

/**
 * A streamed reply's text on its way out: sent as it comes, except while it may still be a tool call (it opens with
 * `{` or `<tool_call>`, where tools were offered), which is held until the reply ends.
 */
class HeldText {
  private held = '';
  private streaming: boolean;

  constructor(
    toolsOffered: boolean,
    private readonly send: (text: string) => void,
  ) {
    this.streaming = !toolsOffered;
  }

  add(text: string): void {
    if (this.streaming) return this.send(text);
    this.held += text;
    const start = this.held.trimStart();
    const mayBeCall = start === '' || start.startsWith('{') || start.startsWith('<tool_call>') || '<tool_call>'.startsWith(start);
    if (!mayBeCall) this.flush();
  }

  /** Sends what is held, and streams from here on. */
  flush(): void {
    this.streaming = true;
    if (this.held !== '') this.send(this.held);
    this.held = '';
  }
}

/** The sampled text behind an assistant message the gateway answered with tool calls (all of them its own, from one reply). */
function sampledText(route: Route, message: WireMessage): string | null {
  const ids = message.tool_calls?.map((c) => c.id) ?? [];
  if (ids.length === 0) return null;
  const texts = new Set(ids.map((id) => route.sampledByCallId.get(id)));
  return texts.size === 1 ? ([...texts][0] ?? null) : null;
}

/** The text of a request's messages after its last assistant message (all of them on a first call). */
function sentSinceReply(messages: readonly WireMessage[]): string {
  let last = messages.length - 1;
  while (last >= 0 && messages[last]!.role !== 'assistant') last--;
  return messages
    .slice(last + 1)
    .map((message, index) => messageText(message, last + 1 + index))
    .join('\n\n');
}

const budgetRefusal = (what: string): GatewayRefusal => new GatewayRefusal(429, `the episode's budget is spent: ${what}`, 'insufficient_quota', 'episode_budget_exhausted');

function chunk(id: string, created: number, model: string, delta: Record<string, unknown>, finishReason: string | null): unknown {
  return { id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }] };
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** A request body, at most 32 MiB (a long agent transcript is a few MB). */
function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    req.on('data', (part: Buffer) => {
      size += part.length;
      if (size > 32 << 20) {
        reject(new GatewayRefusal(413, 'the body is over 32 MiB', 'invalid_request_error', 'body_too_large'));
        req.destroy();
      } else parts.push(part);
    });
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}
