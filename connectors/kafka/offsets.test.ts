import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KafkaError } from '../../schemas/index.js';
import { fetchTopicEnds, settledTopicOffsets } from './offsets.js';
import type { KafkaAdmin, TopicWatermarks } from './port.js';

const ends: TopicWatermarks[] = [{ partition: 0, low: '0', high: '7' }];
const notLeader = (): KafkaError => new KafkaError('kafka (kafkajs): This server is not the leader for that topic-partition', 'NOT_LEADER_FOR_PARTITION', { retriable: true });

/** An admin whose ListOffsets fails with `failures` in turn, then answers `ends`; counts the calls. */
function adminFailing(failures: Error[]): { admin: KafkaAdmin; calls: () => number } {
  let calls = 0;
  const admin = {
    fetchTopicOffsets: async () => {
      const failure = failures[calls++];
      if (failure) throw failure;
      return ends;
    },
  } as unknown as KafkaAdmin;
  return { admin, calls: () => calls };
}

test('a broker that has not learnt a new partition\'s leader yet ("not the leader") is asked again, by fetchTopicEnds and by settledTopicOffsets', async () => {
  const direct = adminFailing([notLeader(), notLeader()]);
  assert.deepEqual(await fetchTopicEnds(direct.admin, 'it-topic'), ends);
  assert.equal(direct.calls(), 3);
  const settled = adminFailing([notLeader()]);
  assert.deepEqual(await settledTopicOffsets(settled.admin, 'it-topic'), ends);
  assert.ok(settled.calls() >= 4, 'one retried fetch, then the polls that see the ends agree');
});

test('an error that is not retriable reaches the caller at once', async () => {
  const refused = new KafkaError('kafka (kafkajs): the topic is not authorised', 'TOPIC_AUTHORIZATION_FAILED', { retriable: false });
  const failing = adminFailing([refused]);
  await assert.rejects(fetchTopicEnds(failing.admin, 'it-topic'), (error: unknown) => error === refused);
  assert.equal(failing.calls(), 1);
});
