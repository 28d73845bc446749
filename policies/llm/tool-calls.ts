import type { ToolSpec } from '../../envs/index.js';
import { parseJsonBounded, TOOL_ARGUMENT_BOUNDS, type ToolCall } from '../../schemas/index.js';

/**
 * The JSON Schema of one reply: a call of exactly one of the tools, `{"name": ..., "arguments": {...}}`, with
 * the tool's own argument schema. Given to llama.cpp as `json_schema`, sampling can produce nothing else.
 */
export function toolCallSchema(tools: readonly ToolSpec[]): Record<string, unknown> {
  return {
    oneOf: tools.map((tool) => ({
      type: 'object',
      properties: { name: { const: tool.name }, arguments: tool.parameters },
      required: ['name', 'arguments'],
      additionalProperties: false,
    })),
  };
}

/** A reply whose opening is fixed: the text it starts with, and the GBNF grammar (llama.cpp's `grammar`) of the rest. */
export interface FixedOpeningReply {
  readonly prefix: string;
  readonly grammar: string;
}

/**
 * The replies `{"name": <tool>, "arguments": {<argument>: v}}` with v one of `values`, spaced exactly as here: the
 * fixed opening up to the value, and a grammar that leaves no choice but the value and ends the reply after the
 * closing brace. A JSON-Schema grammar admits any whitespace between tokens, and a model whose weights drift (a
 * few LoRA updates at a high learning rate) fills its whole token budget with it. The opening is given in the
 * prompt rather than sampled: decoded one token at a time it cost a step per token (twenty of them) and added
 * tokens that carry no choice to what the learner trains on.
 */
export function oneArgumentCall(tool: string, argument: string, values: readonly (string | number)[]): FixedOpeningReply {
  if (values.length === 0) throw new RangeError(`oneArgumentCall: no values for ${tool}.${argument}`);
  const literal = (text: string): string => JSON.stringify(text);
  const choices = values.map((value) => literal(JSON.stringify(value))).join(' | ');
  // The space goes with the value, where the tokenizer puts it (" 17" is the token the model would write).
  return { prefix: `{"name": ${JSON.stringify(tool)}, "arguments": {${JSON.stringify(argument)}:`, grammar: `root ::= " " value "}}"\nvalue ::= ${choices}\n` };
}

/** The tools as the system prompt lists them (for servers whose chat template knows no tools). */
export function describeTools(tools: readonly ToolSpec[]): string {
  return tools
    .map((tool) => {
      const properties = (tool.parameters.properties ?? {}) as Record<string, { type?: string }>;
      const args = Object.entries(properties).map(([name, schema]) => `"${name}": <${schema.type ?? 'value'}>`);
      return `- {"name": "${tool.name}", "arguments": {${args.join(', ')}}}  ${tool.description}`;
    })
    .join('\n');
}

export type ParsedReply = { readonly call: ToolCall; readonly invalid: null } | { readonly call: null; readonly invalid: string };

/**
 * A reply read as one tool call, or why it is not one: not JSON, not an object, no known tool name, arguments
 * that are not an object. Whether the arguments suit the tool is the environment's to say, as for any call.
 */
export function parseToolCallReply(reply: string, tools: readonly ToolSpec[]): ParsedReply {
  const read = parseJsonBounded(reply, TOOL_ARGUMENT_BOUNDS);
  if ('problem' in read) {
    return { call: null, invalid: `the reply is not one JSON object we read (${reply.trim() === '' ? 'it is empty' : `${read.problem}; it starts ${JSON.stringify(reply.slice(0, 60))}`}); reply with exactly one tool call` };
  }
  const parsed = read.value;
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return { call: null, invalid: 'the reply must be a JSON object {"name": ..., "arguments": {...}}' };
  const { name, arguments: args } = parsed as { name?: unknown; arguments?: unknown };
  return checkedCall(name, args ?? {}, tools);
}

/** A function call the server parsed (OpenAI tool_calls): its name and raw JSON argument string. */
export function parseFunctionCall(name: string, rawArguments: string, tools: readonly ToolSpec[]): ParsedReply {
  const read = parseJsonBounded(rawArguments || '{}', TOOL_ARGUMENT_BOUNDS);
  if ('problem' in read) return { call: null, invalid: `the arguments of ${JSON.stringify(name.slice(0, 80))} are not JSON we read (${read.problem}): ${JSON.stringify(rawArguments.slice(0, 80))}` };
  return checkedCall(name, read.value, tools);
}

function checkedCall(name: unknown, args: unknown, tools: readonly ToolSpec[]): ParsedReply {
  const known = tools.map((tool) => tool.name);
  if (typeof name !== 'string' || !known.includes(name)) return { call: null, invalid: `unknown tool ${JSON.stringify(name) ?? 'nothing'}; tools: ${known.join(', ')}` };
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return { call: null, invalid: `the arguments of ${name} must be a JSON object` };
  return { call: { name, arguments: args as Record<string, unknown> }, invalid: null };
}
