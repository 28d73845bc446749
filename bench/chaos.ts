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
import { parseArgs } from 'node:util';
import { intOption } from '../cli/command.js';
import { KAFKA_CLIENTS, type KafkaClientName } from '../connectors/kafka/index.js';
import { checkoutRoot } from '../schemas/index.js';
import { CHAOS_POLICIES, runChaos, type ChaosPolicy } from './chaos/index.js';

const { values } = parseArgs({
  options: {
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
});
const client = values.client as KafkaClientName | undefined;
if (client !== undefined && !KAFKA_CLIENTS.includes(client)) throw new Error(`--client: one of ${KAFKA_CLIENTS.join(', ')}, got ${client}`);
const policy = values.policy as ChaosPolicy | undefined;
if (policy !== undefined && !CHAOS_POLICIES.includes(policy)) throw new Error(`--policy: one of ${CHAOS_POLICIES.join(', ')}, got ${policy}`);

const loadAtStart = loadavg()[0]!;
const startedAt = new Date().toISOString();
const result = await runChaos({
  seed: values.seed,
  client,
  policy,
  tasks: intOption(values, 'tasks'),
  groupSize: intOption(values, 'group-size'),
  batchSize: intOption(values, 'batch-size'),
  minutes: intOption(values, 'minutes'),
  meanGapSeconds: intOption(values, 'gap-seconds'),
  stallSeconds: intOption(values, 'stall-seconds'),
});

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
