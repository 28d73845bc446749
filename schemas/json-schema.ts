import { z } from 'zod';

/**
 * The registry schema is generated from zod so the two can never drift. Draft-07 is what the registry
 * client's validator and the registry's compatibility checker both understand.
 */
export function toRegistrySchema(schema: z.ZodType): string {
  return JSON.stringify(z.toJSONSchema(schema, { target: 'draft-7', io: 'input' }));
}

/** Flattens zod issues into `path: message` strings for error messages and dead letters. */
export function describeIssues(error: z.ZodError): string[] {
  return error.issues.map((issue) => `${issue.path.length ? issue.path.join('.') : '(root)'}: ${issue.message}`);
}
