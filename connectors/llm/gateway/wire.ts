import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { TemplateMessage } from '../llama-cpp/index.js';

/**
 * OpenAI's chat-completions wire format as the gateway reads and writes it: the request's fields (checked, each
 * refusal naming its field), error bodies, response and SSE chunk objects, and tool calls in a reply's text.
 */

/** A content part; only text can be rendered by a text-only chat template. */
const ContentPart = z.object({ type: z.string(), text: z.string().optional() }).passthrough();

const ToolCallWire = z.object({
  id: z.string(),
  type: z.literal('function').optional(),
  function: z.object({ name: z.string(), arguments: z.string() }),
});

const Message = z
  .object({
    role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
    content: z.union([z.string(), z.array(ContentPart), z.null()]).optional(),
    name: z.string().optional(),
    tool_calls: z.array(ToolCallWire).optional(),
    tool_call_id: z.string().optional(),
  })
  .passthrough();

const Tool = z.object({
  type: z.literal('function'),
  function: z.object({ name: z.string().min(1), description: z.string().optional(), parameters: z.record(z.string(), z.unknown()).optional() }).passthrough(),
});

/**
 * The fields the gateway honours, and those it refuses where they are set to anything but their neutral value: each
 * would change what is sampled in a way the record could not say (penalties, logit biases and stop words reshape or
 * cut the distribution the learner's ratio is computed under; llama.cpp's stop words also drop sampled tokens from
 * the text but not from the ids), or ask for more than one reply per call.
 */
export const ChatCompletionRequest = z
  .object({
    model: z.string().optional(),
    messages: z.array(Message).min(1),
    stream: z.boolean().nullable().optional(),
    stream_options: z.object({ include_usage: z.boolean().optional() }).passthrough().nullable().optional(),
    temperature: z.number().min(0).max(2).nullable().optional(),
    top_p: z.number().gt(0).max(1).nullable().optional(),
    max_tokens: z.number().int().min(1).nullable().optional(),
    max_completion_tokens: z.number().int().min(1).nullable().optional(),
    seed: z.number().int().min(0).max(2 ** 31 - 1).nullable().optional(),
    n: z.literal(1).nullable().optional(),
    tools: z.array(Tool).nullable().optional(),
    tool_choice: z.union([z.enum(['auto', 'none']), z.object({ type: z.string() }).passthrough()]).nullable().optional(),
    stop: z.union([z.null(), z.array(z.string()).length(0)]).optional(),
    presence_penalty: z.literal(0).nullable().optional(),
    frequency_penalty: z.literal(0).nullable().optional(),
    logit_bias: z.record(z.string(), z.never()).nullable().optional(),
  })
  .passthrough();
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;
export type WireMessage = z.infer<typeof Message>;
export type WireTool = z.infer<typeof Tool>;

/** What a refused field is told, beyond zod's own words. */
const REFUSED: Record<string, string> = {
  stop: 'stop words are not supported: they would cut sampled tokens from the reply but not from the recorded ids',
  presence_penalty: 'penalties are not supported: the record keeps logprobs under temperature and top_p alone',
  frequency_penalty: 'penalties are not supported: the record keeps logprobs under temperature and top_p alone',
  logit_bias: 'logit_bias is not supported: the record keeps logprobs under temperature and top_p alone',
  n: 'one choice per call (n = 1)',
};

export class BadRequest extends Error {
  constructor(
    message: string,
    readonly param: string | null,
  ) {
    super(message);
  }
}

/** The request, or a BadRequest naming the first field that is wrong. */
export function parseChatRequest(body: unknown): ChatCompletionRequest {
  const parsed = ChatCompletionRequest.safeParse(body);
  if (parsed.success) {
    if (parsed.data.tool_choice !== undefined && parsed.data.tool_choice !== null && typeof parsed.data.tool_choice === 'object') {
      throw new BadRequest('tool_choice: only "auto" and "none" are supported (decoding is not constrained to a named tool)', 'tool_choice');
    }
    return parsed.data;
  }
  const issue = parsed.error.issues[0]!;
  const param = issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('').replace(/^\./, '') || null;
  const top = typeof issue.path[0] === 'string' ? issue.path[0] : '';
  throw new BadRequest(`${param ?? 'body'}: ${REFUSED[top] ?? issue.message}`, param);
}

/** A message's text: a string, or its text parts joined; other parts cannot be rendered. */
export function messageText(message: WireMessage, index: number): string {
  const { content } = message;
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  return content
    .map((part, p) => {
      if (part.type !== 'text' || typeof part.text !== 'string') throw new BadRequest(`messages[${index}].content[${p}]: only text parts are supported, got ${part.type}`, `messages[${index}].content[${p}]`);
      return part.text;
    })
    .join('');
}

/** OpenAI's error body. */
export interface ErrorBody {
  readonly error: { message: string; type: string; param: string | null; code: string };
}

export const errorBody = (message: string, type: string, code: string, param: string | null = null): ErrorBody => ({ error: { message, type, param, code } });

export interface ParsedToolCall {
  readonly id: string;
  readonly name: string;
  /** The arguments as a JSON string, as OpenAI sends them. */
  readonly arguments: string;
}

const callId = (): string => `call_${randomBytes(12).toString('hex')}`;

/**
 * A reply's tool calls, where the whole reply is one: a JSON object `{"name", "arguments"}` naming an offered tool,
 * alone or inside `<tool_call>` tags (the form tool-trained templates teach). Anything else is text, returned as the
 * model wrote it: a small model's near-miss is the harness's to handle, never rewritten here.
 */
export function parseToolCalls(reply: string, tools: readonly WireTool[]): ParsedToolCall[] | null {
  if (tools.length === 0) return null;
  const names = new Set(tools.map((t) => t.function.name));
  const bodies: string[] = [];
  const tagged = [...reply.matchAll(/<tool_call>([\s\S]*?)<\/tool_call>/g)];
  if (tagged.length > 0) {
    if (reply.replace(/<tool_call>[\s\S]*?<\/tool_call>/g, '').trim() !== '') return null;
    bodies.push(...tagged.map((m) => m[1]!));
  } else bodies.push(reply);
  const calls: ParsedToolCall[] = [];
  for (const body of bodies) {
    let value: unknown;
    try {
      value = JSON.parse(body.trim());
    } catch {
      return null;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
    const { name, arguments: args, parameters } = value as { name?: unknown; arguments?: unknown; parameters?: unknown };
    const given = args ?? parameters ?? {};
    if (typeof name !== 'string' || !names.has(name) || typeof given !== 'object' || given === null || Array.isArray(given)) return null;
    calls.push({ id: callId(), name, arguments: JSON.stringify(given) });
  }
  return calls;
}

/**
 * The system prompt's tool list, for a template that renders no `tools` of its own: what the model is told to
 * reply with to call one (the form `parseToolCalls` reads).
 */
export function describeToolsForPrompt(tools: readonly WireTool[]): string {
  const list = tools.map((t) => JSON.stringify({ name: t.function.name, description: t.function.description ?? '', parameters: t.function.parameters ?? {} })).join('\n');
  return `You may call one of these tools by replying with exactly one JSON object {"name": <tool name>, "arguments": <object>} and nothing else:\n${list}`;
}

/**
 * The request's messages as the template's input. `sampledReply(message)` gives back the text the model sampled for
 * an assistant message the gateway answered (found by its tool-call ids), so that a harness's tool-call message is
 * rendered as the reply it stands for. A template without tools of its own gets their list in the system prompt.
 */
export function templateMessages(request: ChatCompletionRequest, supportsTools: boolean, sampledReply: (message: WireMessage) => string | null): TemplateMessage[] {
  const tools = request.tools ?? [];
  const out: TemplateMessage[] = request.messages.map((message, i) => {
    const role = message.role === 'developer' ? 'system' : message.role;
    const sampled = message.role === 'assistant' ? sampledReply(message) : null;
    if (sampled !== null) return { role, content: sampled };
    const content = messageText(message, i);
    if (message.role === 'assistant' && message.tool_calls && message.tool_calls.length > 0) {
      // A call the gateway did not sample (another server's, or the harness's own): the template renders it where it
      // can; otherwise it is written as the JSON form the model is told to use.
      if (supportsTools) return { role, content, tool_calls: message.tool_calls };
      const calls = message.tool_calls.map((c) => `{"name": ${JSON.stringify(c.function.name)}, "arguments": ${c.function.arguments}}`).join('\n');
      return { role, content: content === '' ? calls : `${content}\n${calls}` };
    }
    return { role, content, ...(message.tool_call_id !== undefined && supportsTools ? { tool_call_id: message.tool_call_id } : {}), ...(message.name !== undefined && supportsTools ? { name: message.name } : {}) };
  });
  if (tools.length === 0 || supportsTools || request.tool_choice === 'none') return out;
  const listing = describeToolsForPrompt(tools);
  if (out[0]?.role === 'system') return [{ role: 'system', content: `${out[0].content}\n\n${listing}` }, ...out.slice(1)];
  return [{ role: 'system', content: listing }, ...out];
}

/** One server-sent event carrying `data` as JSON (OpenAI's framing: `data: <json>` and a blank line). */
export const sseEvent = (data: unknown): string => `data: ${JSON.stringify(data)}\n\n`;

/** The stream's last event. */
export const SSE_DONE = 'data: [DONE]\n\n';
