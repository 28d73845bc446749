import { z } from 'zod';
import { ConfigError, TrialrunError, WorkspaceFileError, type ToolCall, type ToolResult } from '../schemas/index.js';

/**
 * One tool of an environment, defined once: its arguments as a zod object give both the JSON Schema that
 * language models call it by (`toolSpecs`) and the check every call passes before it runs (`checkToolCall`).
 */
export interface ToolDef<Args extends z.ZodObject = z.ZodObject, Name extends string = string> {
  readonly name: Name;
  readonly description: string;
  /** A strict object (`z.strictObject`), so that an argument the tool does not take is refused by name. */
  readonly args: Args;
}

/** Defines a tool; `args` is made strict so no unknown argument slips through. */
export function tool<Name extends string, Shape extends z.ZodRawShape>(name: Name, description: string, shape: Shape): ToolDef<z.ZodObject<Shape, z.core.$strict>, Name> {
  return { name, description, args: z.strictObject(shape) };
}

/** A tool as an environment offers it to language models: a name, what it does, its arguments as JSON Schema. */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly parameters: Record<string, unknown>;
}

const specCache = new WeakMap<ToolDef, ToolSpec>();

/**
 * The function-calling spec of a tool, derived from its zod arguments. The safe-integer bounds zod adds to every
 * integer say nothing to a model and only bloat a sampling grammar, so they are left out. One object per tool,
 * so that every consumer shares the same spec.
 */
export function toolSpec(def: ToolDef): ToolSpec {
  let spec = specCache.get(def);
  if (!spec) {
    const schema = z.toJSONSchema(def.args, {
      override: ({ jsonSchema }) => {
        if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
        if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
      },
    }) as Record<string, unknown>;
    delete schema.$schema;
    spec = { name: def.name, description: def.description, parameters: schema };
    specCache.set(def, spec);
  }
  return spec;
}

export const toolSpecs = (tools: readonly ToolDef[]): ToolSpec[] => tools.map(toolSpec);

/** A call that passed its tool's argument check: the tool's name and its parsed arguments. */
export interface CheckedCall<Name extends string = string> {
  readonly name: Name;
  readonly args: Record<string, unknown>;
}

/**
 * The tool a call names with its arguments checked against the tool's own zod object; a ConfigError says what
 * is wrong (not an object, an unknown tool, an argument missing, of the wrong type or one the tool does not take),
 * naming the argument, so the environment can return it as a failed ToolResult.
 */
export function checkToolCall<Def extends ToolDef>(tools: readonly Def[], action: ToolCall): CheckedCall<Def['name']> {
  if (typeof action !== 'object' || action === null) throw new ConfigError(`a tool call must be an object with a name and arguments, got ${JSON.stringify(action)}`);
  const { name } = action;
  const def = tools.find((candidate) => candidate.name === name);
  if (!def) throw new ConfigError(`unknown tool ${JSON.stringify(name)}; tools: ${tools.map((candidate) => candidate.name).join(', ')}`);
  const args: unknown = action.arguments;
  if (typeof args !== 'object' || args === null || Array.isArray(args)) throw new ConfigError(`tool ${name}: arguments must be an object, got ${JSON.stringify(args) ?? String(args)}`);
  const parsed = def.args.safeParse(args);
  if (!parsed.success) throw new ConfigError(describeArgumentIssue(def, args as Record<string, unknown>, parsed.error.issues[0]!));
  return { name: def.name, args: parsed.data as Record<string, unknown> };
}

const TYPE_WORDS: Record<string, string> = { string: 'a string', integer: 'a whole number', number: 'a number', boolean: 'true or false', array: 'a list', object: 'an object' };

/** One zod issue as the agent reads it: which argument, what it must be, what it got. */
function describeArgumentIssue(def: ToolDef, args: Record<string, unknown>, issue: z.core.$ZodIssue): string {
  const properties = (toolSpec(def).parameters.properties ?? {}) as Record<string, { type?: string }>;
  if (issue.code === 'unrecognized_keys') {
    const known = Object.keys(properties);
    return `tool ${def.name} takes no argument ${issue.keys.map((key) => JSON.stringify(key)).join(', ')} (it takes ${known.join(', ') || 'none'})`;
  }
  const argument = String(issue.path[0] ?? '');
  const value = Object.hasOwn(args, argument) ? args[argument] : undefined;
  const got = value === undefined ? 'nothing' : (JSON.stringify(value) ?? String(value)).slice(0, 200);
  if (issue.code === 'invalid_type') return `tool ${def.name}: argument "${argument}" must be ${TYPE_WORDS[properties[argument]?.type ?? ''] ?? 'given'}, got ${got}`;
  return `tool ${def.name}: argument "${argument}" ${issue.message.replace(/^Too (big|small): expected \w+ to (be|have) /, 'must be ')}, got ${got}`;
}

/**
 * A tool refused or failed on what the agent asked (an edit id out of range, no unique match, a module it
 * broke): the agent reads the reason as a failed result and the episode goes on. Never retried: the same call is
 * refused the same way.
 */
export class ToolRefusal extends TrialrunError {}

/** Errors that are the agent's to read (a malformed call, a bad path, a refusal), not the sandbox's or ours. */
export const isAgentError = (error: unknown): error is Error => error instanceof ConfigError || error instanceof WorkspaceFileError || error instanceof ToolRefusal;

/** How an environment writes tool results: output above `maxChars` keeps its head and tail. */
export interface ToolResults {
  ok(output: string): ToolResult;
  fail(output: string): ToolResult;
  clip(text: string): string;
}

export function toolResults(maxChars: number): ToolResults {
  const clip = (text: string): string => (text.length > maxChars ? `${text.slice(0, maxChars / 2)}\n...\n${text.slice(-maxChars / 2)}` : text);
  return {
    clip,
    ok: (output) => ({ ok: true, output: clip(output), truncated: output.length > maxChars, exitCode: 0 }),
    fail: (output) => ({ ok: false, output: clip(output), truncated: false, exitCode: null }),
  };
}
