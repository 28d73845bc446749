import { z } from 'zod';

/**
 * The registry schema is generated from zod so the two can never drift. Draft-07 is what the registry
 * client's validator and the registry's compatibility checker both understand.
 */
export function toRegistrySchema(schema: z.ZodType): string {
  return JSON.stringify(closeObjects(z.toJSONSchema(schema, { target: 'draft-7', io: 'input' })));
}

/**
 * Gives every object that lists its properties a closed content model (`additionalProperties: false`).
 * Under the registry's BACKWARD check, adding an optional property to an open model is a narrowing (old
 * data might hold that name with any value) and is refused; to a closed model it is compatible. zod strips
 * unknown keys, so records never carry properties the schema does not list. Maps (`z.record`) keep theirs.
 */
export function closeObjects<T>(node: T): T {
  return mapSchemaNodes(node, (out) => {
    if (out.type === 'object' && typeof out.properties === 'object' && !('additionalProperties' in out)) out.additionalProperties = false;
  });
}

/** A copy of a JSON Schema with `edit` applied to the copy of every object in it, innermost first. */
export function mapSchemaNodes<T>(node: T, edit: (copy: Record<string, unknown>) => void): T {
  if (Array.isArray(node)) return node.map((item: unknown) => mapSchemaNodes(item, edit)) as T;
  if (typeof node !== 'object' || node === null) return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) out[key] = mapSchemaNodes(value, edit);
  edit(out);
  return out as T;
}

/** True when a registered JSON schema's root object is open (what builds before closeObjects registered). */
export function hasOpenRoot(schema: string): boolean {
  try {
    const root = JSON.parse(schema) as { type?: unknown; properties?: unknown; additionalProperties?: unknown };
    return root.type === 'object' && typeof root.properties === 'object' && root.additionalProperties === undefined;
  } catch {
    return false;
  }
}

/** Flattens zod issues into `path: message` strings for error messages and dead letters. */
export function describeIssues(error: z.ZodError): string[] {
  return error.issues.map((issue) => `${issue.path.length ? issue.path.join('.') : '(root)'}: ${issue.message}`);
}

/**
 * A contract as JSON Schema for checking records read from the wire: zod's input form (defaults optional)
 * and open objects, as zod reads them (it strips keys it does not know: a newer writer's field is no error).
 */
export function contractJsonSchema(schema: z.ZodType): Record<string, unknown> {
  return z.toJSONSchema(schema, { target: 'draft-7', io: 'input' }) as Record<string, unknown>;
}

type ZodNode = { _zod: { def: ZodDef } };
interface ZodDef {
  readonly type: string;
  readonly checks?: ReadonlyArray<{ _zod: { def: { check: string } } }>;
  readonly [field: string]: unknown;
}

/**
 * Whether zod checks more than the JSON Schema it generates can say: a refinement (`refine`, `superRefine`,
 * `check`) or a transform, anywhere in the contract. JSON Schema drops both silently; a reader that checks
 * records by the schema alone must run zod as well for such a contract.
 */
export function hasChecksBeyondJsonSchema(schema: z.ZodType): boolean {
  const seen = new Set<ZodDef>();
  const visit = (node: ZodNode): boolean => {
    const def = node._zod.def;
    if (seen.has(def)) return false;
    seen.add(def);
    if (def.checks?.some((check) => check._zod.def.check === 'custom')) return true;
    const children: unknown[] = [];
    switch (def.type) {
      case 'custom':
      case 'transform':
      case 'pipe':
        return true;
      case 'object':
        children.push(...Object.values(def.shape as Record<string, unknown>), def.catchall);
        break;
      case 'array':
        children.push(def.element);
        break;
      case 'union':
        children.push(...(def.options as unknown[]));
        break;
      case 'intersection':
        children.push(def.left, def.right);
        break;
      case 'tuple':
        children.push(...(def.items as unknown[]), def.rest);
        break;
      case 'record':
      case 'map':
        children.push(def.keyType, def.valueType);
        break;
      case 'lazy':
        children.push((def.getter as () => unknown)());
        break;
      default:
        // Wrappers (optional, nullable, default, readonly, ...) hold one inner type.
        children.push(def.innerType);
    }
    return children.some((child) => child !== undefined && child !== null && visit(child as ZodNode));
  };
  return visit(schema as unknown as ZodNode);
}
