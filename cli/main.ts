import '../envs/index.js';
import { asKafkaConnectionError } from '../connectors/kafka/index.js';
import { ConfigError, errorMessage, ValidationError } from '../schemas/index.js';
import { runCommand } from './command.js';
import { COMMANDS } from './commands/index.js';

function usage(): string {
  return [
    'trialrun: a durable, replayable Kafka data plane for agent RL on executable, verifiable tasks',
    '',
    'Usage: trialrun [--debug] <command> [options]',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(8)} ${c.summary.split('\n')[0]}`),
    '',
    'Run `trialrun <command> --help` for a command\'s options; --debug (or TRIALRUN_DEBUG=1) shows stack traces of errors.',
    'Endpoints: KAFKA_BROKERS, SCHEMA_REGISTRY_URL, DOCKER_HOST; state: TRIALRUN_STATE_DIR; data: TRIALRUN_DATA_DIR; topic prefix: TRIALRUN_TOPIC_PREFIX.',
  ].join('\n');
}

/** Exit statuses: 2 for a user error (a wrong option, file or name), 1 for anything else that failed. */
export const EXIT_USER_ERROR = 2;
export const EXIT_FAILURE = 1;

/** User errors: the fix is in the command line or its files, so they get a message and no trace. */
const isUserError = (error: unknown): boolean => error instanceof ConfigError || error instanceof ValidationError;

/** The error's stack and its causes', for --debug. */
function trace(error: unknown): string {
  const lines: string[] = [];
  for (let current = error, depth = 0; current !== undefined && depth < 5; depth++) {
    lines.push(depth === 0 ? '' : 'caused by:', current instanceof Error ? (current.stack ?? current.message) : String(current));
    current = current instanceof Error ? current.cause : undefined;
  }
  return lines.filter(Boolean).join('\n');
}

/**
 * The CLI's one error boundary: a single line `trialrun <command>: <message>` on stderr, exit 2 for a
 * user error and 1 otherwise; the stack trace only with --debug or TRIALRUN_DEBUG=1. A Kafka client
 * failure to connect becomes the message naming KAFKA_BROKERS and the address.
 */
export function reportError(label: string, error: unknown, debug: boolean): number {
  const shown = asKafkaConnectionError(error) ?? error;
  process.stderr.write(`${label}: ${errorMessage(shown)}\n`);
  if (debug) process.stderr.write(`${trace(error)}\n`);
  return isUserError(shown) ? EXIT_USER_ERROR : EXIT_FAILURE;
}

/** Runs the command line `argv` (without node and the script) and returns its exit status; never throws. */
export async function main(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const debug = argv.includes('--debug') || env.TRIALRUN_DEBUG === '1';
  const [name, ...rest] = argv.filter((arg) => arg !== '--debug');
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${usage()}\n`);
    return name ? 0 : EXIT_USER_ERROR;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) return reportError('trialrun', new ConfigError(`unknown command "${name}"; one of ${COMMANDS.map((c) => c.name).join(', ')} (see trialrun --help)`), debug);
  const label = `trialrun ${command.name}`;
  // Whatever the client or a library drops outside the command's own promise ends the same way.
  const fail = (error: unknown): never => process.exit(reportError(label, error, debug));
  process.on('unhandledRejection', fail).on('uncaughtException', fail);
  try {
    return await runCommand('trialrun', command, rest);
  } catch (error) {
    return reportError(label, error, debug);
  } finally {
    process.off('unhandledRejection', fail).off('uncaughtException', fail);
  }
}
