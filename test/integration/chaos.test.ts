/**
 * The chaos run, short and seeded (bench/chaos/, `npm run chaos` runs it longer): the loop's processors as their
 * own processes on a 3-broker cluster and a Docker engine of the run's own; each processor, one broker and the
 * engine SIGKILLed once at seeded moments and started again. Asserts the counts, by id, in Kafka and in the lake:
 * every task's trajectories, verifications and rewards exactly once, every checkpoint from its parent, no dead
 * letter but the poison record's.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chaosTargets, runChaos, type ChaosResult } from '../../bench/chaos/index.js';
import type { KafkaClientName } from '../../connectors/kafka/index.js';

const TASKS = 8;
const GROUP_SIZE = 2;

function assertExact(result: ChaosResult): void {
  assert.equal(result.stall, null, `no stall (${JSON.stringify(result.stall)})`);
  assert.deepEqual(result.kills.map((k) => k.target).sort(), chaosTargets(false).sort(), 'every processor, a broker and the engine killed once');
  assert.equal(result.tasks, TASKS, 'every task published');
  for (const [place, tally] of [['Kafka', result.kafka], ['lake', result.lake]] as const) {
    assert.ok(tally, `${place} counted`);
    for (const kind of ['trajectories', 'verifications', 'rewards'] as const) {
      assert.deepEqual({ ...tally[kind] }, { expected: TASKS * GROUP_SIZE, records: TASKS * GROUP_SIZE, lost: 0, duplicated: 0, unexpected: 0 }, `${place}: every ${kind.slice(0, -1)} exactly once`);
    }
    assert.equal(tally.checkpoints.duplicated, 0, `${place}: no checkpoint twice`);
    assert.equal(tally.checkpoints.brokenLinks, 0, `${place}: every checkpoint from its parent`);
  }
  assert.equal(result.kafka.checkpoints.records, result.kafka.checkpoints.expected, 'one checkpoint per full batch of learnable rewards');
  assert.equal(result.lake!.checkpoints.records, result.kafka.checkpoints.records, 'every checkpoint landed');
  assert.equal(result.kafka.deadLetters!.other, 0, 'no dead letter but poison');
  assert.ok(result.kafka.deadLetters!.poison >= 1, 'the poison task was dead-lettered');
  assert.deepEqual(result.unexpectedExits, [], 'no process died without being killed');
  assert.equal(result.status, 'exact');
}

// kafkajs only: with the confluent client, processes died with SIGSEGV 75 s (the transaction deadline) after the
// broker kill, though the counts stayed exact (docs/kafka.md, "Chaos"); the case comes back once that is fixed.
for (const client of ['kafkajs'] as KafkaClientName[]) {
  test(`a short seeded chaos run: every part killed once, every count exact in Kafka and in the lake (${client})`, { timeout: 1_800_000 }, async () => {
    const result = await runChaos({ seed: '46', client, tasks: TASKS, groupSize: GROUP_SIZE, batchSize: 2, minutes: 25, meanGapSeconds: 12, stallSeconds: 150, log: (line) => console.log(`# ${line}`) });
    assertExact(result);
  });
}
