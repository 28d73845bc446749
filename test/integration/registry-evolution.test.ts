import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, test } from 'node:test';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { z } from 'zod';
import { resolveRegistryUrl, TopicSerde } from '../../connectors/registry/index.js';
import { ConfigError, Task, toRegistrySchema, topicNames } from '../../schemas/index.js';
import { ensureStack } from './harness.js';

before(ensureStack, { timeout: 900_000 });

// The serde's validator options: the contracts use formats (date-time) that only zod checks.
const registry = new SchemaRegistry({ host: resolveRegistryUrl() }, { [SchemaType.JSON]: { strict: false, validateFormats: false } as object });
const configUrl = (subject: string): string => `${resolveRegistryUrl()}/config/${encodeURIComponent(subject)}`;
const setBackward = (subject: string): Promise<Response> =>
  fetch(configUrl(subject), { method: 'PUT', headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' }, body: JSON.stringify({ compatibility: 'BACKWARD' }) });
const register = (subject: string, schema: string): Promise<{ id: number }> => registry.register({ type: SchemaType.JSON, schema }, { subject });
const freshNames = () => topicNames(`it-evolve-${randomUUID().slice(0, 8)}.`);

test('contracts evolve under BACKWARD: an added optional property is accepted, an added required one refused', { timeout: 60_000 }, async () => {
  const serde = new TopicSerde(freshNames());
  await serde.register(['tasks']);
  const subject = serde.subject('tasks');
  assert.ok((await register(subject, toRegistrySchema(Task.extend({ owner: z.string().optional() })))).id > 0);
  await assert.rejects(register(subject, toRegistrySchema(Task.extend({ owner: z.string().optional(), team: z.string() }))), /Incompatible artifact: .*new required property/);
});

test('a subject an older build registered with an open content model is closed once, then checked as usual', { timeout: 60_000 }, async () => {
  const notices: string[] = [];
  const serde = new TopicSerde(freshNames(), { log: (line) => notices.push(line) });
  const subject = serde.subject('tasks');
  await setBackward(subject);
  await register(subject, JSON.stringify(z.toJSONSchema(Task, { target: 'draft-7', io: 'input' })));

  await serde.register(['tasks']);
  assert.equal(notices.length, 1, notices.join('\n'));
  assert.match(notices[0]!, /moving .*-value to a closed content model/);
  const config = (await (await fetch(configUrl(subject))).json()) as { compatibilityLevel?: string; compatibility?: string };
  assert.equal(config.compatibilityLevel ?? config.compatibility, 'BACKWARD', 'the compatibility rule is back in force');
  await serde.register(['tasks']);
  assert.equal(notices.length, 1, 'a closed subject is never forced again');
});

test('a build whose contract breaks a closed subject gets a ConfigError naming the subject, and nothing is forced', { timeout: 60_000 }, async () => {
  const notices: string[] = [];
  const serde = new TopicSerde(freshNames(), { log: (line) => notices.push(line) });
  const subject = serde.subject('tasks');
  await setBackward(subject);
  // A later contract already made `owner` required; this build's contract does not allow it.
  await register(subject, toRegistrySchema(Task.extend({ owner: z.string() })));
  await assert.rejects(serde.register(['tasks']), (error: unknown) => error instanceof ConfigError && error.message.includes(subject) && !error.retriable);
  assert.deepEqual(notices, []);
});
