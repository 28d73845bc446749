import { Ajv, type ValidateFunction } from 'ajv';
import type { z } from 'zod';
import { contractJsonSchema, describeIssues, hasChecksBeyondJsonSchema, mapSchemaNodes, TOPICS, ValidationError, type TopicKey, type TopicValue } from '../../schemas/index.js';

/** A record as read from the wire and checked against its contract, but not rebuilt by zod. */
export interface CheckedRecord {
  /** The parsed JSON, in the contract's input form: fields zod would default may be absent. */
  readonly input: unknown;
  /** The record's JSON bytes (after the registry frame), exactly as written. */
  readonly json: Buffer;
}

/**
 * Checks parsed records against their topic's contract by its JSON Schema, compiled once by ajv: the same
 * contract zod holds (the schema is generated from it), at a tenth of zod's cost on a trajectory, since
 * nothing is rebuilt. A record that fails is checked by zod again for its dead letter's words, so readers
 * see the same reasons whichever check ran. A contract with refinements or transforms, which JSON Schema
 * cannot hold, is checked by zod as well.
 */
export class WireCheck {
  private readonly ajv = new Ajv({ strict: false, allErrors: false, validateFormats: false });
  private readonly checks = new Map<TopicKey, { schema: ValidateFunction; needsZod: boolean }>();

  /** Throws ValidationError, with zod's words, for a value that breaks the topic's contract. */
  check(key: TopicKey, value: unknown): void {
    let compiled = this.checks.get(key);
    if (!compiled) {
      const schema = TOPICS[key].schema;
      compiled = { schema: this.ajv.compile(finiteNumbers(contractJsonSchema(schema))), needsZod: hasChecksBeyondJsonSchema(schema) };
      this.checks.set(key, compiled);
    }
    if (compiled.schema(value)) {
      if (compiled.needsZod) parseContract(key, value);
      return;
    }
    parseContract(key, value);
    // zod took what its own JSON Schema refused: the schema's words, then.
    const issues = (compiled.schema.errors ?? []).map((error) => `${error.instancePath || '(root)'}: ${error.message ?? 'invalid'}`);
    throw new ValidationError(`a ${TOPICS[key].name} record`, issues);
  }
}

/**
 * zod's numbers are finite; JSON Schema's need not be, and JSON.parse reads 1e400 as Infinity. Bounds on
 * every number make the schema refuse what zod refuses.
 */
function finiteNumbers<T>(node: T): T {
  return mapSchemaNodes(node, (out) => {
    if (!(Array.isArray(out.type) ? out.type : [out.type]).includes('number')) return;
    out.maximum ??= Number.MAX_VALUE;
    out.minimum ??= -Number.MAX_VALUE;
  });
}

/** Checks a value against its topic's zod contract and returns zod's output (defaults filled in). */
export function parseContract<K extends TopicKey>(key: K, raw: unknown): TopicValue<K> {
  const schema: z.ZodType = TOPICS[key].schema;
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new ValidationError(`a ${TOPICS[key].name} record`, describeIssues(parsed.error));
  return parsed.data as TopicValue<K>;
}
