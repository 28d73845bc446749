import assert from 'node:assert/strict';
import { test } from 'node:test';
import { toRegistrySchema } from './json-schema.js';
import { TOPICS, topicNames } from './topics.js';

test('topic names carry the prefix; changelogs are per processor and store', () => {
  const names = topicNames('t-1.');
  assert.equal(names.name('tasks'), 't-1.tasks');
  assert.equal(names.name('policyCheckpoints'), 't-1.policy-checkpoints');
  assert.equal(names.changelog('reward', 'groups'), 't-1.reward.groups.changelog');
  assert.throws(() => topicNames('bad prefix/'), /prefix/);
});

test('every topic has a draft-07 registry schema generated from its zod contract', () => {
  for (const contract of Object.values(TOPICS)) {
    const schema = JSON.parse(toRegistrySchema(contract.schema)) as { $schema: string; type: string; required: string[] };
    assert.equal(schema.$schema, 'http://json-schema.org/draft-07/schema#');
    assert.equal(schema.type, 'object');
    // Dead letters and pins are operational records about other records, not data with lineage of their own.
    assert.ok(schema.required.includes('lineage') || ['dead-letters', 'policy-pins'].includes(contract.name), `${contract.name} carries lineage`);
  }
});

test('compacted topics are the ones read as tables', () => {
  assert.equal(TOPICS.tasks.config['cleanup.policy'], 'compact');
  assert.equal(TOPICS.policyCheckpoints.config['cleanup.policy'], 'compact');
  assert.equal(TOPICS.trajectories.config['cleanup.policy'], 'delete');
});
