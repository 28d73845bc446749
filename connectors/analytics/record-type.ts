import { sqlIdent } from './sql.js';

/** The parts of a JSON Schema (draft-07, as zod writes it) that decide a DuckDB type. */
type JsonSchema = {
  readonly type?: string | readonly string[];
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly items?: JsonSchema | readonly JsonSchema[];
  readonly anyOf?: readonly JsonSchema[];
  readonly oneOf?: readonly JsonSchema[];
  readonly enum?: readonly unknown[];
  readonly const?: unknown;
  readonly $ref?: string;
  readonly definitions?: Readonly<Record<string, JsonSchema>>;
  readonly $defs?: Readonly<Record<string, JsonSchema>>;
};

const SCALARS: Readonly<Record<string, string>> = { string: 'VARCHAR', integer: 'BIGINT', number: 'DOUBLE', boolean: 'BOOLEAN' };

/**
 * The DuckDB type a topic's records are read with, from the contract's JSON Schema (generated from zod):
 * DuckDB's JSON reader parses each record natively into this type and the table's SQL columns read it,
 * so no record is rebuilt in JavaScript on its way to Parquet. Shapes a typed column cannot hold (maps,
 * unions, free-form values) are read as JSON text.
 */
export function duckdbRecordType(schema: object): string {
  const root = schema as JsonSchema;
  const resolve = (node: JsonSchema): JsonSchema => {
    if (!node.$ref) return node;
    const match = /^#\/(definitions|\$defs)\/(.+)$/.exec(node.$ref);
    const target = match ? root[match[1] as 'definitions' | '$defs']?.[decodeURIComponent(match[2]!)] : undefined;
    if (!target) throw new Error(`JSON Schema reference ${node.$ref} is not among the schema's definitions`);
    return target;
  };
  const typeOf = (given: JsonSchema, depth: number): string => {
    // A recursive contract would never end: its deeper levels are JSON text.
    if (depth > 32) return 'JSON';
    const node = resolve(given);
    const alternatives = (node.anyOf ?? node.oneOf)?.filter((option) => resolve(option).type !== 'null');
    if (alternatives) return alternatives.length === 1 ? typeOf(alternatives[0]!, depth + 1) : 'JSON';
    const types = (Array.isArray(node.type) ? node.type : node.type === undefined ? [] : [node.type]).filter((type) => type !== 'null');
    if (types.length === 0) {
      const values = node.enum ?? (node.const === undefined ? [] : [node.const]);
      return values.length > 0 && values.every((value) => typeof value === 'string') ? 'VARCHAR' : 'JSON';
    }
    if (types.length > 1) return 'JSON';
    const [type] = types as [string];
    if (type in SCALARS) return SCALARS[type]!;
    if (type === 'array') return node.items && !Array.isArray(node.items) ? `${typeOf(node.items as JsonSchema, depth + 1)}[]` : 'JSON';
    if (type === 'object' && node.properties && Object.keys(node.properties).length > 0) {
      return `STRUCT(${Object.entries(node.properties).map(([name, field]) => `${sqlIdent(name)} ${typeOf(field, depth + 1)}`).join(', ')})`;
    }
    return 'JSON';
  };
  return typeOf(root, 0);
}
