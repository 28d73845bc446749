import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KafkaPort } from '../../connectors/kafka/index.js';
import type { TopicSerde } from '../../connectors/registry/index.js';
import type { SandboxPool } from '../../connectors/sandbox/index.js';
import { linearRepairKind } from '../../policies/index.js';
import { ConfigError, topicNames } from '../../schemas/index.js';
import type { ProcessorContext } from '../runtime/index.js';
import { createRolloutWorkerLanes } from './worker.js';

// Nothing connects while lanes are made: a Kafka client or pool that is used would throw.
const unused = new Proxy({}, { get: (_, name) => { throw new Error(`touched ${String(name)}`); } });
const context: ProcessorContext = { kafka: unused as KafkaPort, serde: unused as TopicSerde, names: topicNames('unit.') };
// The pool's methods may be looked up (a lane binds its engine probe), never called.
const idlePool = new Proxy({}, { get: (_, name) => () => { throw new Error(`called pool.${String(name)}`); } });
const options = { runId: 'r', pool: idlePool as SandboxPool, imageFor: () => 'x', policies: { kind: linearRepairKind, current: () => unused as never } };

test('rollout lanes are members of one group, each under its own stable instance id (and so transactional id)', () => {
  const lanes = createRolloutWorkerLanes(context, { ...options, instanceId: 'host-a', lanes: 3 });
  assert.deepEqual(lanes.map((lane) => lane.instanceId), ['host-a.0', 'host-a.1', 'host-a.2']);
  assert.deepEqual([...new Set(lanes.map((lane) => lane.groupId))], ['unit.rollout-worker']);
  // One lane is the plain worker, under the instance id it was given.
  assert.deepEqual(createRolloutWorkerLanes(context, { ...options, instanceId: '2' }).map((lane) => lane.instanceId), ['2']);
});

test('a lane count that is not a whole number >= 1 is refused, naming the option', () => {
  for (const lanes of [0, 1.5, -1]) {
    assert.throws(() => createRolloutWorkerLanes(context, { ...options, lanes }), (error: unknown) => error instanceof ConfigError && /RolloutLanesOptions\.lanes must be a whole number >= 1, got/.test(error.message));
  }
});
