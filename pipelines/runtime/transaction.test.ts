import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CommittedOffset, KafkaConsumer, KafkaProducer, KafkaTransaction, TopicPartitionOffset } from '../../connectors/kafka/index.js';
import { KafkaError, TimeoutError } from '../../schemas/index.js';
import { TransactionalProducer } from './transaction.js';

type Step = 'sendBatch' | 'sendOffsets' | 'commit';

/** Producers whose transactions fail (or hang) at one step; every call is logged as `<producer>:<call>`. */
function producers(failAt: (producer: number) => { step: Step; hang?: boolean } | undefined) {
  const calls: string[] = [];
  let made = 0;
  const create = async (): Promise<KafkaProducer> => {
    const id = made++;
    const step = (name: Step | 'abort'): Promise<void> => {
      calls.push(`${id}:${name}`);
      const failure = failAt(id);
      if (failure?.step !== name) return Promise.resolve();
      if (failure.hang) return new Promise(() => undefined);
      return Promise.reject(new KafkaError(`${name} lost its answer`, 'REQUEST_TIMED_OUT', { retriable: true }));
    };
    const transaction: KafkaTransaction = {
      send: () => step('sendBatch'),
      sendBatch: () => step('sendBatch'),
      sendOffsets: () => step('sendOffsets'),
      commit: () => step('commit'),
      abort: () => step('abort'),
    };
    return {
      connect: async () => undefined,
      disconnect: async () => void calls.push(`${id}:disconnect`),
      send: async () => undefined,
      sendBatch: async () => undefined,
      transaction: async () => transaction,
    };
  };
  return { create, calls, made: () => made };
}

const consumer = { groupId: 'g' } as KafkaConsumer;
const offsets: TopicPartitionOffset[] = [{ topic: 't', partition: 0, offset: '8', metadata: null }];
const records = [{ topic: 'out', key: 'k', value: Buffer.from('v') }];
const committedAt = (offset: string) => async (): Promise<Array<{ topic: string; partitions: CommittedOffset[] }>> => [{ topic: 't', partitions: [{ partition: 0, offset, metadata: '' }] }];

describe('TransactionalProducer', () => {
  it('retries a retriable failure to register at start (a coordinator still loading), and gives up at once on a fenced one', async () => {
    const fake = producers(() => undefined);
    let tries = 0;
    const loadingTwice = async (): Promise<KafkaProducer> => {
      if (tries++ < 2) throw new KafkaError('Failed to initialize Producer ID: Broker: Coordinator load in progress', '14', { retriable: true });
      return fake.create();
    };
    const producer = new TransactionalProducer(loadingTwice, 'test', committedAt('8'));
    await producer.connect();
    assert.equal(tries, 3);
    await producer.commit(records, consumer, offsets);
    assert.deepEqual(fake.calls, ['0:sendBatch', '0:sendOffsets', '0:commit']);
    let fencedTries = 0;
    const fenced = new TransactionalProducer(async () => {
      fencedTries++;
      throw new KafkaError('Broker: Producer fenced', '90', { retriable: false });
    }, 'test', committedAt('8'));
    await assert.rejects(fenced.connect(), /Producer fenced/);
    assert.equal(fencedTries, 1);
  });

  it('counts a commit whose answer was lost as done when the group shows its offsets, on a new producer', async () => {
    const fake = producers((id) => (id === 0 ? { step: 'commit' } : undefined));
    const producer = new TransactionalProducer(fake.create, 'test', committedAt('8'));
    await producer.connect();
    await producer.commit(records, consumer, offsets);
    assert.deepEqual(fake.calls, ['0:sendBatch', '0:sendOffsets', '0:commit', '0:disconnect'], 'a lost commit is not aborted');
    assert.equal(fake.made(), 2, 'the next producer, whose registration finished the old transaction, was made to read the outcome');
    await producer.commit(records, consumer, offsets);
    assert.deepEqual(fake.calls.slice(4), ['1:sendBatch', '1:sendOffsets', '1:commit'], 'and it runs the next transaction');
  });

  it('throws a lost commit the group does not show, and a failure before the commit aborts without reading offsets', async () => {
    let reads = 0;
    const lost = producers((id) => (id === 0 ? { step: 'commit' } : undefined));
    const producer = new TransactionalProducer(lost.create, 'test', async () => (reads++, committedAt('5')()));
    await producer.connect();
    await assert.rejects(producer.commit(records, consumer, offsets), /commit lost its answer/);
    assert.equal(reads, 1);

    const early = producers((id) => (id === 0 ? { step: 'sendOffsets' } : undefined));
    const second = new TransactionalProducer(early.create, 'test', async () => (reads++, committedAt('8')()));
    await second.connect();
    await assert.rejects(second.commit(records, consumer, offsets), /sendOffsets lost its answer/);
    assert.equal(reads, 1, 'a transaction that never reached its commit did not commit');
    assert.deepEqual(early.calls, ['0:sendBatch', '0:sendOffsets', '0:abort', '0:disconnect']);
    await second.commit(records, consumer, offsets);
    assert.deepEqual(early.calls.slice(4), ['1:sendBatch', '1:sendOffsets', '1:commit'], 'the next transaction starts on a new producer');
  });

  it('gives a transaction that hangs up after its deadline with a retriable TimeoutError', async () => {
    const fake = producers((id) => (id === 0 ? { step: 'sendBatch', hang: true } : undefined));
    const producer = new TransactionalProducer(fake.create, 'test', committedAt('0'), 20);
    await producer.connect();
    await assert.rejects(producer.commit(records, consumer, offsets), (error) => error instanceof TimeoutError && error.retriable);
    await producer.commit(records, consumer, offsets);
    assert.equal(fake.made(), 2);
  });
});
