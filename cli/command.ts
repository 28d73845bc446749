import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError } from '../schemas/index.js';
import type { OptionValues } from './options.js';

export type Options = NonNullable<ParseArgsConfig['options']>;

/** A subcommand: its help is generated from the same option table that parses it. */
export interface Command {
  readonly name: string;
  readonly summary: string;
  /** Positional arguments, e.g. `<query>`. */
  readonly usage: string;
  readonly options: Options;
  /** Help text for each option, by name. */
  readonly help: Readonly<Record<string, string>>;
  /** Returns the exit status; user errors are thrown as ConfigError and reported by the CLI's error boundary. */
  run(values: OptionValues, positionals: string[]): Promise<number>;
}

export function helpText(prefix: string, command: Command): string {
  const lines = [`Usage: ${prefix} ${command.name}${command.usage ? ` ${command.usage}` : ''} [options]`, '', command.summary, '', 'Options:'];
  return [...lines, ...optionLines(command.options, command.help)].join('\n');
}

/** One line per option of the table (with its default), then `--help`; the benches list theirs with it too. */
export function optionLines(options: Options, help: Readonly<Record<string, string>> = {}): string[] {
  const flags = Object.entries(options).map(([name, spec]) => ({ name, spec, flag: `--${name}${spec.type === 'string' ? ' <value>' : ''}` }));
  // Wide enough for the longest flag, so its help never runs into it.
  const width = Math.max(26, ...flags.map(({ flag }) => flag.length + 2));
  const lines: string[] = [];
  for (const { name, spec, flag } of flags) {
    const fallback = spec.default !== undefined ? ` (default: ${String(spec.default)})` : '';
    lines.push(`  ${flag.padEnd(width)}${`${help[name] ?? ''}${fallback}`.trim()}`.trimEnd());
  }
  lines.push(`  ${'--help'.padEnd(width)}Show this help`);
  return lines;
}

/** Parses a command's arguments and runs it; a malformed command line is a ConfigError that points at --help. */
export async function runCommand(prefix: string, command: Command, argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: { ...command.options, help: { type: 'boolean', short: 'h' } }, allowPositionals: true, strict: true });
  } catch (error) {
    throw new ConfigError(`${error instanceof Error ? error.message : String(error)} (see ${prefix} ${command.name} --help)`);
  }
  if (parsed.values.help) {
    process.stdout.write(`${helpText(prefix, command)}\n`);
    return 0;
  }
  // `trialrun demo limit 5` must not run the whole demo with the words ignored.
  if (!command.usage && parsed.positionals.length > 0) {
    throw new ConfigError(`takes no arguments, got "${parsed.positionals.join(' ')}" (options start with --; see ${prefix} ${command.name} --help)`);
  }
  return command.run(parsed.values as OptionValues, parsed.positionals);
}

// The benches parse their flags with the same checks.
export { intOption } from './options.js';
