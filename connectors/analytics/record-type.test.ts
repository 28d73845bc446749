import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { contractJsonSchema } from '../../schemas/index.js';
import { duckdbRecordType } from './record-type.js';

test('a contract becomes the DuckDB type its records are read with: structs, lists, nullable scalars; maps and unions as JSON', () => {
  const Inner = z.object({ at: z.iso.datetime(), kind: z.enum(['a', 'b']) });
  const schema = z.object({
    id: z.string(),
    count: z.number().int().nullable(),
    score: z.number().default(0),
    ok: z.boolean().optional(),
    tags: z.array(z.string()),
    items: z.array(Inner),
    again: Inner,
    files: z.record(z.string(), z.string()),
    either: z.union([z.string(), z.number()]),
    free: z.unknown(),
    'odd "name"': z.literal('x'),
  });
  assert.equal(
    duckdbRecordType(contractJsonSchema(schema)),
    'STRUCT("id" VARCHAR, "count" BIGINT, "score" DOUBLE, "ok" BOOLEAN, "tags" VARCHAR[], "items" STRUCT("at" VARCHAR, "kind" VARCHAR)[], ' +
      '"again" STRUCT("at" VARCHAR, "kind" VARCHAR), "files" JSON, "either" JSON, "free" JSON, "odd ""name""" VARCHAR)',
  );
});

test('references resolve to their definitions; one that is not there is an error naming it', () => {
  assert.equal(duckdbRecordType({ type: 'object', properties: { a: { $ref: '#/definitions/A' } }, definitions: { A: { type: 'integer' } } }), 'STRUCT("a" BIGINT)');
  assert.throws(() => duckdbRecordType({ type: 'object', properties: { a: { $ref: '#/definitions/B' } } }), /#\/definitions\/B is not among the schema's definitions/);
});
