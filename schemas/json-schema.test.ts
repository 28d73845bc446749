import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { contractJsonSchema, hasChecksBeyondJsonSchema, hasOpenRoot, toRegistrySchema } from './json-schema.js';
import { TOPICS } from './topics.js';

/** Every object schema that lists properties, with its path. */
function objectsWithProperties(node: unknown, path = '$'): Array<{ path: string; node: Record<string, unknown> }> {
  if (Array.isArray(node)) return node.flatMap((item, i) => objectsWithProperties(item, `${path}[${i}]`));
  if (typeof node !== 'object' || node === null) return [];
  const record = node as Record<string, unknown>;
  const own = record.type === 'object' && typeof record.properties === 'object' ? [{ path, node: record }] : [];
  return [...own, ...Object.entries(record).flatMap(([key, value]) => objectsWithProperties(value, `${path}.${key}`))];
}

test('every registered contract has closed objects, so adding an optional property stays BACKWARD compatible', () => {
  for (const [key, topic] of Object.entries(TOPICS)) {
    const schema = toRegistrySchema(topic.schema);
    assert.equal(hasOpenRoot(schema), false, key);
    for (const { path, node } of objectsWithProperties(JSON.parse(schema))) assert.notEqual(node.additionalProperties, undefined, `${key} ${path}`);
  }
});

test('maps keep their value schema and are not closed', () => {
  const schema = JSON.parse(toRegistrySchema(z.object({ files: z.record(z.string(), z.string()) }))) as { additionalProperties: unknown; properties: { files: { additionalProperties: unknown } } };
  assert.equal(schema.additionalProperties, false);
  assert.deepEqual(schema.properties.files.additionalProperties, { type: 'string' });
});

test('hasOpenRoot tells an older build\'s open root from a closed one', () => {
  assert.equal(hasOpenRoot('{"type":"object","properties":{"a":{"type":"string"}}}'), true);
  assert.equal(hasOpenRoot('{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}'), false);
  assert.equal(hasOpenRoot('not json'), false);
});

test('hasChecksBeyondJsonSchema finds a refinement or a transform anywhere, and nothing in plain contracts', () => {
  assert.equal(hasChecksBeyondJsonSchema(z.object({ a: z.string(), b: z.array(z.number().int().min(0)).default([]) })), false);
  assert.equal(hasChecksBeyondJsonSchema(z.object({ a: z.array(z.object({ b: z.string().refine((s) => s !== 'x') })).nullable() })), true);
  assert.equal(hasChecksBeyondJsonSchema(z.object({ a: z.record(z.string(), z.string().transform((s) => s.trim())) })), true);
  assert.equal(hasChecksBeyondJsonSchema(z.union([z.string(), z.object({ n: z.number() }).superRefine(() => undefined)])), true);
  assert.equal(hasChecksBeyondJsonSchema(TOPICS.trajectories.schema), false, 'trajectories: JSON Schema says it all');
  assert.equal(hasChecksBeyondJsonSchema(TOPICS.tasks.schema), true, "tasks: the output checks' refinements");
});

test('contractJsonSchema leaves objects open and defaulted fields optional, as zod reads records', () => {
  const schema = contractJsonSchema(z.object({ a: z.string(), b: z.boolean().default(false) })) as { required?: string[]; additionalProperties?: unknown };
  assert.deepEqual(schema.required, ['a']);
  assert.equal(schema.additionalProperties, undefined);
});
