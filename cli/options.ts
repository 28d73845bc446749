import { existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parsePosition, type Position } from '../connectors/kafka/index.js';
import { LLM_POLICY, LLM_SCAFFOLDS, LLM_SERVER_KINDS, resolveLlmPolicyOptions, type LlmPolicyOptions, type LlmScaffold, type LlmServerKind, type ResolvedLlmPolicyOptions } from '../policies/index.js';
import { ConfigError } from '../schemas/index.js';

/** Parsed option values, as `node:util` parseArgs returns them. */
export type OptionValues = Readonly<Record<string, string | boolean | string[] | undefined>>;

/**
 * Checks of one option's value. Each throws a ConfigError naming the option and what it got, so a command
 * resolves all its options into a checked object before it connects to anything or brings the stack up.
 */

/** A whole number of at least `min` (default 1); undefined when the option was not given and has no default. */
export function intOption(values: OptionValues, name: string, min = 1): number | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  const text = String(raw).trim();
  const value = /^[+-]?\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min) throw new ConfigError(`--${name} must be a whole number >= ${min}, got "${String(raw)}"`);
  return value;
}

/** A whole number of at least `min`, which the option table gives a default for. */
export function requiredInt(values: OptionValues, name: string, min = 1): number {
  const value = intOption(values, name, min);
  if (value === undefined) throw new ConfigError(`--${name} is required`);
  return value;
}

/** A finite number strictly between `above` and `below`, or from one to the other with `inclusive`. */
export function numberOption(values: OptionValues, name: string, range: { above: number; below?: number; inclusive?: boolean }): number {
  const raw = values[name];
  if (raw === undefined) throw new ConfigError(`--${name} is required`);
  const text = String(raw).trim();
  const value = text === '' ? Number.NaN : Number(text);
  const below = range.below ?? Number.POSITIVE_INFINITY;
  const inside = range.inclusive === true ? value >= range.above && value <= below : value > range.above && value < below;
  if (!Number.isFinite(value) || !inside) {
    const [over, under] = range.inclusive === true ? ['>=', '<='] : ['>', '<'];
    const bounds = Number.isFinite(below) ? `${over} ${range.above} and ${under} ${below}` : `${over} ${range.above}`;
    throw new ConfigError(`--${name} must be a number ${bounds}, got "${String(raw)}"`);
  }
  return value;
}

/** One of a fixed set of words. */
export function choiceOption<T extends string>(values: OptionValues, name: string, allowed: readonly T[]): T {
  const raw = String(values[name] ?? '');
  if (!(allowed as readonly string[]).includes(raw)) throw new ConfigError(`--${name} must be one of ${allowed.join(', ')}, got "${raw}"`);
  return raw as T;
}

/** A string option, or undefined; an empty string is refused (a shell variable that expanded to nothing). */
export function stringOption(values: OptionValues, name: string): string | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || raw.trim() === '') throw new ConfigError(`--${name} needs a value`);
  return raw;
}

/** A repeatable string option: undefined when not given, never an empty list or an empty item. */
export function listOption(values: OptionValues, name: string): string[] | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  const list = Array.isArray(raw) ? raw : [String(raw)];
  if (list.some((item) => item.trim() === '')) throw new ConfigError(`--${name} needs a value`);
  return list;
}

/** The absolute path of a file that exists; `what` names it in the error (e.g. "--tasks"). */
export function existingFile(path: string, what: string): string {
  const absolute = resolve(path);
  if (!existsSync(absolute)) throw new ConfigError(`${what}: no such file ${absolute}`);
  if (!statSync(absolute).isFile()) throw new ConfigError(`${what}: ${absolute} is not a file`);
  return absolute;
}

/** The absolute path of a folder that exists. */
export function existingDir(path: string, what: string): string {
  const absolute = resolve(path);
  if (!existsSync(absolute)) throw new ConfigError(`${what}: no such folder ${absolute}`);
  if (!statSync(absolute).isDirectory()) throw new ConfigError(`${what}: ${absolute} is not a folder`);
  return absolute;
}

/** A topic position (earliest, latest, an offset, @<epoch ms>, an ISO time); `fallback` when not given. */
export function positionOption(values: OptionValues, name: string, fallback?: Position): Position {
  const raw = values[name];
  if (raw === undefined) {
    if (fallback === undefined) throw new ConfigError(`--${name} is required`);
    return fallback;
  }
  try {
    return parsePosition(String(raw));
  } catch (error) {
    if (error instanceof ConfigError) throw new ConfigError(`--${name}: ${error.message}`);
    throw error;
  }
}

/** The absolute path of a file to write: its folder must exist (a typo there would fail only at the end). */
export function outputFile(path: string, what: string): string {
  const absolute = resolve(path);
  const folder = dirname(absolute);
  if (!existsSync(folder) || !statSync(folder).isDirectory()) throw new ConfigError(`${what}: no folder ${folder} to write ${absolute} in`);
  if (existsSync(absolute) && statSync(absolute).isDirectory()) throw new ConfigError(`${what}: ${absolute} is a folder`);
  return absolute;
}

/** Task job files (YAML or JSON specs); anything else is read as a file of task rows. */
export const JOB_FILE = /\.(ya?ml|json)$/i;

/** A task rows file (JSON Lines) for commands that take no job file: a job file there is named as such. */
export function taskRowsFile(path: string, what: string): string {
  const absolute = existingFile(path, what);
  if (JOB_FILE.test(absolute)) {
    throw new ConfigError(`${what} takes a JSON Lines file of task rows; ${absolute} is a job file: run it with \`trialrun tasks publish ${path} --dry-run --out tasks.jsonl\` and pass tasks.jsonl`);
  }
  return absolute;
}

/**
 * The llm policy's flags, shared by every command that rolls a policy out (demo, learn, run rollout-worker).
 * They have no table defaults: LlmPolicyOptions holds them, and a flag given without `--policy llm` is refused.
 */
export const LLM_OPTIONS = {
  'llm-url': { type: 'string' },
  model: { type: 'string' },
  'api-key-env': { type: 'string' },
  'llm-server': { type: 'string' },
  temperature: { type: 'string' },
  'top-p': { type: 'string' },
  'max-tokens-per-turn': { type: 'string' },
  seed: { type: 'string' },
  'concurrent-episodes': { type: 'string' },
  'episode-tokens': { type: 'string' },
  'episode-seconds': { type: 'string' },
  unconstrained: { type: 'boolean' },
  scaffold: { type: 'string' },
} as const;

/** LlmPolicyOptions' own defaults, for the help (never a second copy of them). */
const LLM_DEFAULTS = resolveLlmPolicyOptions({}, {});

export const LLM_HELP: Readonly<Record<keyof typeof LLM_OPTIONS, string>> = {
  'llm-url': '--policy llm: OpenAI-compatible base URL of the model server (default: env LLM_BASE_URL, else the stack\'s own, which the command starts)',
  model: `--policy llm: model name (default: env LLM_MODEL, else the stack's ${LLM_DEFAULTS.model})`,
  'api-key-env': '--policy llm: environment variable holding the API key (default: LLM_API_KEY, sent when set)',
  'llm-server': `--policy llm: server kind, one of ${LLM_SERVER_KINDS.join(', ')} (default: auto)`,
  temperature: `--policy llm: sampling temperature, 0..2 (default: ${LLM_DEFAULTS.temperature})`,
  'top-p': `--policy llm: nucleus sampling mass, (0, 1] (default: ${LLM_DEFAULTS.topP})`,
  'max-tokens-per-turn': `--policy llm: completion tokens per model turn (default: ${LLM_DEFAULTS.maxTokensPerTurn})`,
  seed: '--policy llm: sampler seed for every turn (default: drawn per turn from the episode\'s seeded stream)',
  'concurrent-episodes': `--policy llm: episodes a rollout worker runs at once (default: ${LLM_DEFAULTS.concurrentEpisodes}, the stack server's slots)`,
  'episode-tokens': `--policy llm: token budget of an episode's sequence (default: ${LLM_DEFAULTS.maxEpisodeTokens})`,
  'episode-seconds': `--policy llm: wall-clock budget in seconds of an episode's model turns (default: ${LLM_DEFAULTS.maxEpisodeMs / 1000})`,
  unconstrained: '--policy llm: no constrained decoding (an invalid reply is then a failed turn the model is told about)',
  scaffold: `--policy llm: how the model acts, one of ${LLM_SCAFFOLDS.join(', ')} (default: ${LLM_DEFAULTS.scaffold}): agent calls any of the environment's tools; repair-script (program-repair/v1) makes the scripted repair policies' one choice, which candidate edit to apply, the rest scripted`,
};

const FLAG_OF_FIELD: Readonly<Record<string, string>> = {
  baseUrl: '--llm-url (or LLM_BASE_URL)',
  model: '--model',
  apiKeyEnv: '--api-key-env',
  server: '--llm-server',
  temperature: '--temperature',
  topP: '--top-p',
  maxTokensPerTurn: '--max-tokens-per-turn',
  seed: '--seed',
  concurrentEpisodes: '--concurrent-episodes',
  maxEpisodeTokens: '--episode-tokens',
  maxEpisodeMs: '--episode-seconds (in ms)',
  scaffold: '--scaffold',
};

export interface PolicyChoice {
  readonly policyId: string;
  /** Set with --policy llm. */
  readonly llm?: ResolvedLlmPolicyOptions;
}

/** `--policy` and, for llm, its flags resolved and checked (before `stack up`); llm flags with another policy are refused. */
export function policyChoice(values: OptionValues, allowed: readonly string[], env: NodeJS.ProcessEnv = process.env): PolicyChoice {
  const policyId = choiceOption(values, 'policy', allowed);
  const given = Object.keys(LLM_OPTIONS).filter((name) => values[name] !== undefined && values[name] !== false);
  if (policyId !== LLM_POLICY) {
    if (given.length > 0) throw new ConfigError(`${given.map((name) => `--${name}`).join(', ')} ${given.length === 1 ? 'goes' : 'go'} with --policy llm, not --policy ${policyId}`);
    return { policyId };
  }
  // Any finite number: its range is LlmPolicyOptions' to check.
  const number = (name: string): number | undefined => {
    const raw = values[name];
    if (raw === undefined) return undefined;
    const value = String(raw).trim() === '' ? Number.NaN : Number(raw);
    if (!Number.isFinite(value)) throw new ConfigError(`--${name} must be a number, got "${String(raw)}"`);
    return value;
  };
  const server = values['llm-server'] === undefined ? undefined : choiceOption<LlmServerKind>(values, 'llm-server', LLM_SERVER_KINDS);
  const seconds = values['episode-seconds'] === undefined ? undefined : numberOption(values, 'episode-seconds', { above: 0 });
  const options: LlmPolicyOptions = {
    baseUrl: stringOption(values, 'llm-url'),
    model: stringOption(values, 'model'),
    apiKeyEnv: stringOption(values, 'api-key-env'),
    server,
    temperature: number('temperature'),
    topP: number('top-p'),
    maxTokensPerTurn: intOption(values, 'max-tokens-per-turn'),
    seed: intOption(values, 'seed', 0),
    concurrentEpisodes: intOption(values, 'concurrent-episodes'),
    maxEpisodeTokens: intOption(values, 'episode-tokens'),
    maxEpisodeMs: seconds === undefined ? undefined : Math.round(seconds * 1000),
    constrained: values.unconstrained === true ? false : undefined,
    scaffold: values.scaffold === undefined ? undefined : choiceOption<LlmScaffold>(values, 'scaffold', LLM_SCAFFOLDS),
  };
  try {
    return { policyId, llm: resolveLlmPolicyOptions(options, env) };
  } catch (error) {
    // The flags the user typed, not the field names.
    if (error instanceof ConfigError) throw new ConfigError(error.message.replace(/LlmPolicyOptions\.(\w+)/g, (field, name: string) => FLAG_OF_FIELD[name] ?? field));
    throw error;
  }
}
