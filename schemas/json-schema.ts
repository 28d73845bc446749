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
  if (Array.isArray(node)) return node.map((item: unknown) => closeObjects(item)) as T;
  if (typeof node !== 'object' || node === null) return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) out[key] = closeObjects(value);
  if (out.type === 'object' && typeof out.properties === 'object' && !('additionalProperties' in out)) out.additionalProperties = false;
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
