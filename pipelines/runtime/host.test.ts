import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ConsumerRunOptions, KafkaPort } from '../../connectors/kafka/index.js';
import type { TopicSerde } from '../../connectors/registry/index.js';
import { HostUnavailableError, isRetriable, SandboxError, ShutdownError, topicNames, type TopicNames } from '../../schemas/index.js';
import { deadLetter } from './dead-letter.js';
import { hostGuard } from './host.js';
import { StreamProcessor } from './processor.js';
import { compose, type RawHandler, type RawRecord } from './types.js';

const record: RawRecord = { topic: 't', topicKey: 'tasks', partition: 0, offset: '7', key: null, value: null, headers: {}, timestamp: '0' };
const payload = (signal = new AbortController().signal) => ({ record, signal });
const failing = (error: unknown): RawHandler => async () => {
  throw error;
};

/** A host check that answers `up` and counts how often it was asked. */
function host(up: boolean): { asked: number; check: () => Promise<boolean> } {
  const state = { asked: 0, check: async () => (state.asked++, up) };
  return state;
}

test('a failure on a host whose engine does not answer becomes a HostUnavailableError, not retriable, with the failure as cause', async () => {
  const down = host(false);
  const lost = new SandboxError('sandbox x is gone: its stream closed', { retriable: true });
  await assert.rejects(hostGuard('rollout-worker', down.check)(failing(lost))(payload()), (error: unknown) => {
    assert.ok(error instanceof HostUnavailableError);
    assert.equal(error.cause, lost);
    assert.equal(isRetriable(error), false);
    assert.match(error.message, /rollout-worker failed \(sandbox x is gone: its stream closed\): what the host needs \(its sandbox engine, its blob stores\) does not answer/);
    return true;
  });
  assert.equal(down.asked, 1);
});

test('on a host that answers a failure stays the record\'s own; a success or a shutdown never asks the host', async () => {
  const up = host(true);
  const lost = new SandboxError('the agent gave no reason');
  await assert.rejects(hostGuard('verifier', up.check)(failing(lost))(payload()), (error) => error === lost);
  assert.equal(up.asked, 1);
  assert.deepEqual(await hostGuard('verifier', up.check)(async () => [])(payload()), []);
  await assert.rejects(hostGuard('verifier', up.check)(failing(new ShutdownError()))(payload()), ShutdownError);
  const stopping = new AbortController();
  stopping.abort();
  await assert.rejects(hostGuard('verifier', up.check)(failing(lost))(payload(stopping.signal)), (error) => error === lost);
  assert.equal(up.asked, 1);
});

test('an unavailable host is never dead-lettered: the record is not at fault', async () => {
  const letters: unknown[] = [];
  const serde = { encode: async () => Buffer.from('letter') } as unknown as TopicSerde;
  const chain = compose(failing(new SandboxError('engine gone', { retriable: true })), deadLetter('verifier', serde, topicNames('unit.'), (letter) => letters.push(letter)), hostGuard('verifier', host(false).check));
  await assert.rejects(chain(payload()), HostUnavailableError);
  assert.deepEqual(letters, []);
  // With the host up the same failure is a dead letter, as before.
  const upChain = compose(failing(new SandboxError('engine gone')), deadLetter('verifier', serde, topicNames('unit.')), hostGuard('verifier', host(true).check));
  assert.equal((await upChain(payload()))[0]?.topic, 'unit.dead-letters');
});

/**
 * A one-partition group on a fake client: each consumer is a new member that is handed the partition's one
 * record (offset 0) until the record is committed; the log says who joined, left and committed.
 */
function oneRecordGroup(names: TopicNames): { kafka: KafkaPort; log: string[] } {
  const log: string[] = [];
  let members = 0;
  let committed = false;
  const kafka = {
    client: 'confluent',
    admin: () => ({ connect: async () => undefined, disconnect: async () => undefined, listTopics: async () => [] }),
    producer: () => ({
      connect: async () => undefined,
      disconnect: async () => undefined,
      transaction: async () => ({
        sendBatch: async () => log.push('sent outputs'),
        sendOffsets: async (_consumer: unknown, offsets: Array<{ offset: string }>) => void log.push(`committed up to ${offsets[0]!.offset}`),
        commit: async () => void (committed = true),
        abort: async () => undefined,
      }),
    }),
    consumer: () => {
      const member = ++members;
      let active = true;
      let batch: Promise<void> = Promise.resolve();
      return {
        groupId: 'unit.rollout-worker',
        connect: async () => void log.push(`member ${member} joined`),
        subscribe: async () => undefined,
        run: async ({ eachBatch }: ConsumerRunOptions) => {
          if (committed) return;
          const message = { offset: '0', key: null, value: Buffer.from('task'), headers: {}, timestamp: '0' };
          batch = eachBatch({ batch: { topic: names.name('tasks'), partition: 0, messages: [message] }, resolveOffset: () => undefined, heartbeat: async () => undefined, isActive: () => active });
        },
        // Like the real clients: a member leaves once its batch handler has returned.
        disconnect: async () => {
          active = false;
          await batch;
          log.push(`member ${member} left`);
        },
      };
    },
  };
  return { kafka: kafka as unknown as KafkaPort, log };
}

test('a processor whose host is down leaves its group with the record uncommitted, probes, and rejoins to do it once the host answers', async () => {
  const names = topicNames('unit.');
  const { kafka, log } = oneRecordGroup(names);
  const serde = { decode: async () => ({}), encode: async () => Buffer.from('') } as unknown as TopicSerde;
  // Down for the failed try and two probes, up from the third probe on.
  let asked = 0;
  const hostAvailable = async (): Promise<boolean> => ++asked > 3;
  const letters: unknown[] = [];
  let tries = 0;
  const done = new Promise<void>((resolve) => {
    const processor = new StreamProcessor(
      { kafka, serde, names },
      { name: 'rollout-worker', inputs: ['tasks'], hostAvailable, hostProbe: { retries: 10, initialDelayMs: 1, maxDelayMs: 2 }, onDeadLetter: (letter) => letters.push(letter) },
      async () => {
        tries++;
        if (asked < 3) throw new SandboxError('sandbox x is gone: its stream closed', { retriable: true });
        setImmediate(() => void processor.stop().then(resolve));
        return [];
      },
    );
    void processor.start();
  });
  await done;
  assert.deepEqual(log, ['member 1 joined', 'member 1 left', 'member 2 joined', 'committed up to 1', 'member 2 left']);
  assert.equal(tries, 2, 'tried once on the dead host (no retry waits on it), once after rejoining');
  assert.equal(asked, 4, 'the failed try and three probes asked the host');
  assert.deepEqual(letters, [], 'nothing dead-lettered');
});
