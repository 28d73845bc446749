import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HostUnavailableError, isRetriable, SandboxError, ShutdownError, topicNames } from '../../schemas/index.js';
import type { TopicSerde } from '../../connectors/registry/index.js';
import { deadLetter } from './dead-letter.js';
import { hostGuard } from './host.js';
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
    assert.match(error.message, /rollout-worker failed \(sandbox x is gone: its stream closed\): the host's sandbox engine does not answer/);
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
