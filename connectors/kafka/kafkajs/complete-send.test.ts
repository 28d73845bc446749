import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PartitionMetadata, RecordMetadata, TopicMessages } from 'kafkajs';
import { KafkaError } from '../../../schemas/index.js';
import type { KafkaLogLine } from '../options.js';
import { PartitionLedger, sendCompletely } from './complete-send.js';

const PARTITIONS: PartitionMetadata[] = [0, 1, 2].map((partitionId) => ({ partitionErrorCode: 0, partitionId, leader: 1, replicas: [1], isr: [1] }));

/**
 * A stand-in for kafkajs's send as it behaves across a leader change: it partitions every message with the
 * producer's partitioner, and answers for every partition but those in `skip` (the ones its retry never sent).
 */
function kafkajsLikeSend(ledger: PartitionLedger, skipOnce: ReadonlySet<number>) {
  const partitioner = ledger.createPartitioner();
  const calls: TopicMessages[][] = [];
  const send = async (batch: TopicMessages[]): Promise<RecordMetadata[]> => {
    calls.push(batch);
    const written = new Set<string>();
    for (const { topic, messages } of batch) {
      for (const message of messages) {
        const partition = partitioner({ topic, partitionMetadata: PARTITIONS, message });
        if (calls.length > 1 || !skipOnce.has(partition)) written.add(`${topic}/${partition}`);
      }
    }
    return [...written].map((entry) => ({ topicName: entry.split('/')[0]!, partition: Number(entry.split('/')[1]), errorCode: 0 }));
  };
  return { send, calls };
}

const keyed = (count: number) => Array.from({ length: count }, (_, i) => ({ key: `trajectory-${i}`, value: `reward ${i}` }));

test('a send whose answer leaves a partition out sends that partition\'s messages again, pinned to it, and says so', async () => {
  const ledger = new PartitionLedger();
  const messages = keyed(12);
  // Where the default partitioner puts each key (murmur2, as Java's): the messages meant for partition 2.
  const probe = new PartitionLedger().createPartitioner();
  const meantFor2 = messages.filter((message) => probe({ topic: 'rewards', partitionMetadata: PARTITIONS, message }) === 2);
  assert.ok(meantFor2.length > 0 && meantFor2.length < messages.length, 'the keys spread over the partitions');

  const { send, calls } = kafkajsLikeSend(ledger, new Set([2]));
  const lines: KafkaLogLine[] = [];
  await sendCompletely(send, [{ topic: 'rewards', messages }], ledger, (line) => lines.push(line));

  assert.equal(calls.length, 2);
  assert.deepEqual(calls[1], [{ topic: 'rewards', messages: meantFor2.map((message) => ({ ...message, partition: 2 })) }]);
  assert.equal(lines.length, 1);
  assert.match(lines[0]!.message, /the send left out rewards\[2\].*sending those records again/);
});

test('a send answered for every partition is sent once, and messages with their own partition keep it', async () => {
  const ledger = new PartitionLedger();
  const { send, calls } = kafkajsLikeSend(ledger, new Set());
  const lines: KafkaLogLine[] = [];
  await sendCompletely(send, [{ topic: 'tasks', messages: [...keyed(5), { key: 'pinned', value: 'x', partition: 1 }] }, { topic: 'trajectories', messages: keyed(3) }], ledger, (line) => lines.push(line));
  assert.equal(calls.length, 1);
  assert.deepEqual(lines, []);
});

test('a partition still left out after five more sends fails the send retriably, naming it', async () => {
  const ledger = new PartitionLedger();
  const partitioner = ledger.createPartitioner();
  let calls = 0;
  // Never answers for partition 0.
  const send = async (batch: TopicMessages[]): Promise<RecordMetadata[]> => {
    calls++;
    for (const { topic, messages } of batch) for (const message of messages) partitioner({ topic, partitionMetadata: PARTITIONS, message });
    return [{ topicName: 'verifications', partition: 1, errorCode: 0 }];
  };
  await assert.rejects(
    sendCompletely(send, [{ topic: 'verifications', messages: [{ key: null, value: 'v', partition: 0 }] }], ledger, () => undefined),
    (error: unknown) => error instanceof KafkaError && error.retriable && /verifications\[0\] were still not sent after sending them again 5 times/.test(error.message),
  );
  assert.equal(calls, 6);
});
