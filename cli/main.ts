import '../envs/index.js';
import { runCommand, type Command } from './command.js';
import { COMMANDS } from './commands/index.js';

function usage(): string {
  return [
    'trialrun: a durable, replayable Kafka data plane for agent RL on executable, verifiable tasks',
    '',
    'Usage: trialrun <command> [options]',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(8)} ${c.summary.split('\n')[0]}`),
    '',
    'Run `trialrun <command> --help` for a command\'s options.',
    'Endpoints: KAFKA_BROKERS, SCHEMA_REGISTRY_URL, DOCKER_HOST; state: TRIALRUN_STATE_DIR; topic prefix: TRIALRUN_TOPIC_PREFIX.',
  ].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${usage()}\n`);
    return name ? 0 : 2;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    process.stderr.write(`trialrun: unknown command "${name}"\n\n${usage()}\n`);
    return 2;
  }
  return runCommand('trialrun', command, rest);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`trialrun: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
