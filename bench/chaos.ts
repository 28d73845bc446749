/**
 * `npm run chaos`: one loop on a 3-broker cluster of its own, its processors as their own processes, and each
 * of them, one broker, its Docker engine (and with --policy llm its model server) SIGKILLed once at seeded
 * moments and started again; then every record counted by id in Kafka and in the Parquet lake (bench/chaos/).
 * Prints what it killed when and the counts, saves bench/results/chaos-<client>.json, and exits non-zero on a
 * stall, a time-out, a count that is not exact or a process that died without being killed.
 *
 *   npm run chaos -- --seed 7 --client kafkajs --minutes 20
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { KAFKA_CLIENTS } from '../connectors/kafka/index.js';
import { checkoutRoot } from '../schemas/index.js';
import { CHAOS_POLICIES, resolveChaos, runChaos, type ChaosOptions } from './chaos/index.js';
import { benchArgs } from './harness.js';

const args = benchArgs(
  'chaos',
  'npm run chaos [-- --seed 7 --client kafkajs --minutes 20]',
  {
    seed: { type: 'string', default: '1' },
    client: { type: 'string' },
    policy: { type: 'string' },
    tasks: { type: 'string' },
    'group-size': { type: 'string' },
    'batch-size': { type: 'string' },
    minutes: { type: 'string' },
    'gap-seconds': { type: 'string' },
    'stall-seconds': { type: 'string' },
  },
  {
    help: {
      seed: 'seed of the kill schedule',
      client: `Kafka client, one of ${KAFKA_CLIENTS.join(', ')} (default: the stack's)`,
      policy: `policy, one of ${CHAOS_POLICIES.join(', ')}`,
      tasks: 'bundled repair tasks published (default: 12)',
      'group-size': 'samples per task (default: 2)',
      'batch-size': 'samples per learner update (default: 4)',
      minutes: "the whole run's time limit (default: 20)",
      'gap-seconds': 'mean gap before each kill (default: 20)',
      'stall-seconds': 'no commit this long with work left is a stall; at least 3 times the longest gap (default: 180)',
    },
  },
);
const { values } = args;
const options: ChaosOptions = {
  seed: values.seed,
  client: args.optionalChoice('client', KAFKA_CLIENTS),
  policy: args.optionalChoice('policy', CHAOS_POLICIES),
  tasks: args.optionalInt('tasks'),
  groupSize: args.optionalInt('group-size'),
  batchSize: args.optionalInt('batch-size'),
  minutes: args.optionalInt('minutes'),
  meanGapSeconds: args.optionalInt('gap-seconds'),
  stallSeconds: args.optionalInt('stall-seconds'),
};
// The run's own checks of its options (a stall time shorter than the gaps), before anything starts, by flag.
const FLAG_OF_FIELD: Readonly<Record<string, string>> = { minutes: '--minutes', meanGapSeconds: '--gap-seconds', stallSeconds: '--stall-seconds', tasks: '--tasks', groupSize: '--group-size', batchSize: '--batch-size', policy: '--policy' };
try {
  resolveChaos(options);
} catch (error) {
  args.fail(String(error instanceof Error ? error.message : error).replace(/ChaosOptions\.(\w+)|\b(meanGapSeconds)\b/g, (field, a?: string, b?: string) => FLAG_OF_FIELD[a ?? b ?? ''] ?? field));
}

const loadAtStart = loadavg()[0]!;
const startedAt = new Date().toISOString();
const result = await runChaos(options);

process.stdout.write(`\nkilled (${result.kills.length}):\n`);
for (const kill of result.kills) process.stdout.write(`  t+${kill.atSeconds}s ${kill.target} ${kill.what}, down ${kill.downSeconds} s, back after ${kill.backAfterSeconds ?? 'never'} s\n`);
if (result.unexpectedExits.length > 0) process.stdout.write(`exited without being killed:\n${result.unexpectedExits.map((line) => `  ${line}\n`).join('')}`);
process.stdout.write(`result: ${result.status} (${result.client}, seed ${result.seed}, ${result.tasks} tasks x ${result.groupSize}, ${result.elapsedSeconds} s)\n`);

// The fields bench:table reads (no comparisons: a chaos run has counts, not rates), then the run itself.
const dir = join(checkoutRoot(), 'bench', 'results');
mkdirSync(dir, { recursive: true });
const path = join(dir, `chaos-${result.client}.json`);
const command = `npm run chaos -- ${process.argv.slice(2).join(' ')}`.trim();
writeFileSync(
  path,
  `${JSON.stringify({ bench: 'chaos', command, startedAt, finishedAt: new Date().toISOString(), node: process.version, cores: cpus().length, load: { start: Math.round(loadAtStart * 100) / 100, end: Math.round(loadavg()[0]! * 100) / 100 }, comparisons: [], chaos: result }, null, 2)}\n`,
);
process.stdout.write(`saved to ${path}\n`);
// A process that died by itself (a crash, a start that gave up) is a finding even where the counts came out exact.
if (result.status === 'exact' && result.unexpectedExits.length > 0) process.stdout.write(`counts exact, but ${result.unexpectedExits.length} processes exited without being killed\n`);
process.exit(result.status === 'exact' && result.unexpectedExits.length === 0 ? 0 : 1);
