import '../envs/index.js';
import { runCommand, type Command } from './command.js';
import { compactCommand } from './commands/compact.js';
import { demoCommand } from './commands/demo.js';
import { learnCommand } from './commands/learn.js';
import { notebookCommand } from './commands/notebook.js';
import { policyCommand } from './commands/policy.js';
import { replayCommand } from './commands/replay.js';
import { runProcessorCommand } from './commands/run.js';
import { sandboxCommand } from './commands/sandbox.js';
import { sqlCommand } from './commands/sql.js';
import { stackCommand } from './commands/stack.js';
import { tasksCommand } from './commands/tasks.js';
import { topicsCommand } from './commands/topics.js';
import { verifyCommand } from './commands/verify.js';

const COMMANDS: readonly Command[] = [stackCommand, demoCommand, tasksCommand, sqlCommand, compactCommand, notebookCommand, replayCommand, topicsCommand, runProcessorCommand, policyCommand, sandboxCommand, verifyCommand];

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
