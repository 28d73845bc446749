import { ChatClient, LlamaCppClient, probeServerKind, servedVersionOf, tokenCompletionCall, vllmChatClient, type ChatMessage, type SamplingParams, type ServerIdentity, type TemplateMessage, type ToolCallRequest } from '../../connectors/llm/index.js';
import { envToolSpecs, type AgentObservation, type AnyEnvSpec, type ToolSpec } from '../../envs/index.js';
import type { LlmCall, LlmTokens, ToolCall, ToolResult } from '../../schemas/index.js';
import type { Action, Policy } from '../types.js';
import type { ResolvedLlmPolicyOptions } from './options.js';
import { describeTools, parseFunctionCall, parseToolCallReply, toolCallSchema, type ParsedReply } from './tool-calls.js';

export const LLM_POLICY = 'llm';

/** The tool name an invalid reply is recorded under (it never reaches the environment). */
export const INVALID_REPLY = 'invalid_reply';

type Backend =
  | { readonly kind: 'llama.cpp'; readonly client: LlamaCppClient; readonly identity: ServerIdentity }
  | { readonly kind: 'vllm' | 'openai'; readonly client: ChatClient };

/** The server's root for its native endpoints: the OpenAI base URL without its trailing /v1. */
const rootOf = (baseUrl: string): string => baseUrl.replace(/\/v1$/, '');

async function connect(options: ResolvedLlmPolicyOptions, version: number): Promise<Backend> {
  const root = rootOf(options.baseUrl);
  const kind = options.server === 'auto' ? await probeServerKind(root, options.apiKey) : options.server;
  if (kind === 'llama.cpp') {
    const client = new LlamaCppClient({ rootUrl: root, apiKey: options.apiKey, timeoutMs: options.requestTimeoutMs });
    return { kind, client, identity: await client.identity() };
  }
  const chat = {
    baseUrl: options.baseUrl,
    model: options.model,
    apiKey: options.apiKey ?? undefined,
    timeoutMs: options.requestTimeoutMs,
    temperature: options.temperature,
    topP: options.topP,
    maxTokens: options.maxTokensPerTurn,
  };
  return { kind, client: kind === 'vllm' ? vllmChatClient(chat, version, options.constrained) : new ChatClient(chat) };
}

/** What an episode's actor takes from its environment's spec: the tools and what the model is told. */
interface EpisodeEnv {
  readonly tools: readonly ToolSpec[];
  readonly prompt: AnyEnvSpec['prompt'];
  /** Single-turn environments: the reply is free text, the one argument of this tool. @default replies are tool calls */
  readonly freeReply?: AnyEnvSpec['freeReply'];
}

/** What one model turn is asked: how the episode opens (its first turn), what answers the previous reply, and the tools the reply may call. */
export interface TurnRequest {
  /** The episode's first messages (system, then task), used on its first turn; `listTools` when the system prompt must list the tools itself. */
  readonly opening: (listTools: boolean) => TemplateMessage[];
  /** What the previous reply led to, as the model reads it (a tool result, or why the reply was refused); null on the first turn. */
  readonly followUp: string | null;
  /** The tools this reply may call; decoding is constrained to them where the server can. */
  readonly tools: readonly ToolSpec[];
  /** A GBNF grammar for the reply, exact where the tools' JSON Schema leaves whitespace free (llama.cpp only; other servers get the tools). @default the tools' schema */
  readonly grammar?: string;
  /**
   * Text the reply starts with, given rather than sampled (llama.cpp, constrained, only; then `grammar` is the
   * rest's): what the grammar would force anyway. Its tokens join the prompt, evaluated in one batch with it
   * instead of one decoding step each, and the learner never trains on them. The reply is this and the sampled text.
   * @default '' (the whole reply is sampled)
   */
  readonly replyPrefix?: string;
  /** The reply is free text, the one argument of this tool (single-turn environments): sampled unconstrained, never parsed as a call. @default a tool call */
  readonly freeReply?: AnyEnvSpec['freeReply'];
}

/** The first two messages of an episode: the environment's instructions with its tools, and the task. */
export function openingMessages(observation: AgentObservation, env: EpisodeEnv, listTools: boolean): TemplateMessage[] {
  // A free reply is the answer itself: the model is told no tools, and nothing constrains what it samples.
  const toolList = env.freeReply ? '' : listTools ? `\n\nReply with exactly one JSON object, a call of one of these tools:\n${describeTools(env.tools)}` : ' Call exactly one tool per reply.';
  const system = `${env.prompt.instructions}${toolList}`;
  // No instructions and no tools: the chat template's own system prompt stands (a small model answers better under it).
  return [...(system === '' ? [] : [{ role: 'system', content: system }]), { role: 'user', content: env.prompt.opening(observation) }];
}

/** A tool result (or why the reply was refused) as the model reads it, cut to `maxChars` (head and tail kept). */
export function resultMessage(tool: string, result: Pick<ToolResult, 'ok' | 'output'>, maxChars: number): string {
  const output = result.output.length > maxChars ? `${result.output.slice(0, maxChars / 2)}\n...\n${result.output.slice(-maxChars / 2)}` : result.output;
  return `${tool} ${result.ok ? 'ok' : 'failed'}:\n${output}`;
}

/**
 * A language model as a policy over any environment: each episode takes its tools (their function-calling specs,
 * derived from the zod definitions) and its prompt from that environment's spec.
 * One actor per episode keeps its transcript. Against llama.cpp every turn is token-exact: the prompt goes in
 * as token ids that only ever grow by appending, decoding is constrained to valid tool calls, and the sampled
 * ids and logprobs go into the trajectory. Against other OpenAI-compatible servers it uses function calling.
 */
export class LlmPolicy implements Policy<AgentObservation> {
  readonly policyId = LLM_POLICY;
  private backend: Promise<Backend> | null = null;

  constructor(
    readonly options: ResolvedLlmPolicyOptions,
    readonly version: number,
  ) {}

  /** The server, probed once per policy; a failed probe is retried by the next episode. */
  connect(): Promise<Backend> {
    this.backend ??= connect(this.options, this.version).catch((error: unknown) => {
      this.backend = null;
      throw error;
    });
    return this.backend;
  }

  startEpisode(env: AnyEnvSpec): LlmEpisode {
    return new LlmEpisode(this, { tools: envToolSpecs(env), prompt: env.prompt, freeReply: env.freeReply });
  }

  act(): Promise<Action> {
    throw new Error('LlmPolicy keeps a transcript per episode: call startEpisode() and act on the actor');
  }
}

const submit = (): Action => ({ action: { name: 'submit', arguments: {} }, decision: null });

/** A free reply as the call it stands for: the whole text, the one argument of the environment's reply tool. */
const freeReplyCall = (freeReply: NonNullable<AnyEnvSpec['freeReply']>, text: string): ParsedReply => ({ call: { name: freeReply.tool, arguments: { [freeReply.argument]: text } }, invalid: null });

/** One episode's actor: the transcript, the token sequence so far, and the budgets. */
export class LlmEpisode implements Policy<AgentObservation> {
  readonly policyId = LLM_POLICY;
  readonly version: number;
  private readonly started = performance.now();
  /** What the model saw, message by message (the template's input). */
  private readonly messages: TemplateMessage[] = [];
  /** llama.cpp: the template's rendering of `messages` (ending with the generation prompt) and the token ids so far (the last completion included). */
  private rendered = '';
  private ids: number[] = [];
  /** The last reply: its call (or why it was refused) and, for function calling, the server's call ids. */
  private last: { tool: string; invalid: string | null; calls: readonly ToolCallRequest[] } | null = null;
  private readonly chat: ChatMessage[] = [];

  constructor(
    private readonly policy: LlmPolicy,
    private readonly env: EpisodeEnv,
  ) {
    this.version = policy.version;
  }

  /** The conversation so far as the chat template's input (system, task, then replies and results). */
  transcript(): readonly TemplateMessage[] {
    return this.messages;
  }

  /** True once the episode's wall-clock budget is spent (the turn cap is runEpisode's, over every reply). */
  exhausted(): boolean {
    return performance.now() - this.started >= this.policy.options.maxEpisodeMs;
  }

  async act(observation: AgentObservation, random: () => number, signal?: AbortSignal): Promise<Action> {
    const { options } = this.policy;
    // The wall-clock budget ends the episode by submitting; the token budget does so in tokenTurn.
    if (this.exhausted()) return submit();
    const followUp = this.last && (this.last.invalid === null ? resultMessage(this.last.tool, observation.lastResult ?? { ok: false, output: '' }, options.maxToolResultChars) : `invalid reply: ${this.last.invalid}`);
    return this.turn({ opening: (listTools) => openingMessages(observation, this.env, listTools), followUp, tools: this.env.freeReply ? [] : this.env.tools, freeReply: this.env.freeReply }, random, signal);
  }

  /** One model turn: the reply to `request`, as an action (an invalid reply is a failed turn the model is told about next). */
  async turn(request: TurnRequest, random: () => number, signal?: AbortSignal): Promise<Action> {
    const { options } = this.policy;
    const backend = await this.policy.connect();
    const sampling: SamplingParams = {
      temperature: options.temperature,
      topP: options.topP,
      maxTokens: options.maxTokensPerTurn,
      seed: options.seed ?? Math.floor(random() * 2 ** 31),
    };
    return backend.kind === 'llama.cpp' ? this.tokenTurn(backend, request, sampling, signal) : this.chatTurn(backend.client, backend.kind, request, sampling, signal);
  }

  private async tokenTurn(backend: Extract<Backend, { kind: 'llama.cpp' }>, request: TurnRequest, sampling: SamplingParams, signal?: AbortSignal): Promise<Action> {
    const { client, identity } = backend;
    const { options } = this.policy;
    const { tools, followUp: result } = request;
    const messages: TemplateMessage[] = result === null ? request.opening(true) : [...this.messages, { role: 'tool', content: result }];
    const rendered = await client.applyTemplate(messages, signal);
    // Only the new part is tokenised: what the template renders after the model's reply (its end-of-turn and
    // the result's turn up to the next generation prompt); the reply's own tokens stay as sampled. A template
    // that renders the conversation so far differently (one that trims or rewrites replies) cannot be
    // extended: the prompt is then tokenised whole, and the record says it does not extend the previous turn.
    const extendsPrevious = result !== null && rendered.startsWith(this.rendered);
    // An unconstrained reply is sampled whole: nothing would hold it to a prefix's continuation.
    const constrained = options.constrained && !request.freeReply;
    const prefix = constrained ? (request.replyPrefix ?? '') : '';
    const appended = await client.tokenize(`${extendsPrevious ? rendered.slice(this.rendered.length) : rendered}${prefix}`, !extendsPrevious, signal);
    const promptIds = extendsPrevious ? [...this.ids, ...appended] : appended;
    if (promptIds.length + sampling.maxTokens > options.maxEpisodeTokens) return submit();
    const constraint = !constrained ? {} : request.grammar !== undefined ? { grammar: request.grammar } : { jsonSchema: toolCallSchema(tools) };
    const completion = await client.complete({ promptIds, sampling, ...constraint }, signal);
    const reply = prefix + completion.content;
    this.ids = [...promptIds, ...completion.completionIds];
    // The reply enters the transcript as the text the server decoded; the next turn checks that the template renders it verbatim.
    this.messages.splice(0, this.messages.length, ...messages, { role: 'assistant', content: reply });
    this.rendered = rendered + reply;
    const llm = tokenCompletionCall(completion, { tokens: { appendedPromptIds: appended, promptLength: promptIds.length, extendsPrevious }, sampling, identity, constrained, reply });
    return this.answer(request.freeReply ? freeReplyCall(request.freeReply, reply) : parseToolCallReply(reply, tools), llm, reply, []);
  }

  private async chatTurn(client: ChatClient, kind: 'vllm' | 'openai', request: TurnRequest, sampling: SamplingParams, signal?: AbortSignal): Promise<Action> {
    const { tools, followUp: result } = request;
    if (result === null) {
      const opening = request.opening(false);
      this.messages.push(...opening);
      this.chat.push(...opening.map((m) => ({ role: m.role as 'system' | 'user', content: m.content })));
    } else {
      // Every call of the last reply is answered by id; only the first was executed.
      const [executed, ...skipped] = this.last?.calls ?? [];
      if (executed) this.chat.push({ role: 'tool', toolCallId: executed.id, content: result });
      else this.chat.push({ role: 'user', content: result });
      for (const call of skipped) this.chat.push({ role: 'tool', toolCallId: call.id, content: 'not executed: one tool call per reply' });
      this.messages.push({ role: 'tool', content: result });
    }
    const previous = this.ids;
    const reply = await client.complete(this.chat, tools, signal, sampling.seed);
    this.chat.push({ role: 'assistant', content: reply.content, toolCalls: reply.toolCalls });
    const [call] = request.freeReply ? [] : reply.toolCalls;
    const text = call ? JSON.stringify({ name: call.name, arguments: call.arguments }) : (reply.content ?? '');
    this.messages.push({ role: 'assistant', content: text });
    // vLLM re-renders and re-tokenises the chat each turn: the ids are recorded as it gives them, and a
    // prompt counts as extending the previous turn only where it truly starts with its prompt and completion.
    let tokens: LlmTokens | null = null;
    if (reply.promptTokenIds && reply.completionTokenIds) {
      const prompt = [...reply.promptTokenIds];
      const extendsPrevious = previous.length > 0 && previous.every((id, i) => prompt[i] === id);
      tokens = { appendedPromptIds: extendsPrevious ? prompt.slice(previous.length) : prompt, promptLength: prompt.length, extendsPrevious, completionIds: [...reply.completionTokenIds] };
      this.ids = [...prompt, ...reply.completionTokenIds];
    }
    const llm: LlmCall = {
      model: reply.model,
      content: reply.content,
      finishReason: reply.finishReason,
      promptTokens: reply.promptTokens,
      completionTokens: reply.completionTokens,
      logprobs: reply.logprobs ? [...reply.logprobs] : null,
      latencyMs: reply.latencyMs,
      attempts: reply.attempts,
      tokens,
      sampling: { ...sampling, seed: kind === 'vllm' ? sampling.seed : null },
      tokenizer: null,
      chatTemplateSha256: null,
      policyVersion: servedVersionOf(reply.model),
      constrained: !request.freeReply && client.options.toolChoice === 'required',
      invalidReply: null,
    };
    const parsed: ParsedReply = request.freeReply ? freeReplyCall(request.freeReply, text) : call ? parseFunctionCall(call.name, call.arguments, tools) : { call: null, invalid: 'the reply called no tool; call exactly one tool per reply' };
    return this.answer(parsed, llm, text, reply.toolCalls);
  }

  private answer(parsed: ParsedReply, llm: LlmCall, reply: string, calls: readonly ToolCallRequest[]): Action {
    if (parsed.call) {
      this.last = { tool: parsed.call.name, invalid: null, calls };
      return { action: parsed.call, decision: null, llm };
    }
    this.last = { tool: INVALID_REPLY, invalid: parsed.invalid, calls };
    const recorded: ToolCall = { name: INVALID_REPLY, arguments: { reply } };
    return { action: recorded, decision: null, llm: { ...llm, invalidReply: parsed.invalid }, invalid: parsed.invalid };
  }
}
