import { z } from 'zod';

/**
 * Where a record came from. Every record on every topic carries one, so that any row in the analytics
 * store can be traced back to the task, the sample, the loop run, the policy, the sandbox image and the
 * verifier that produced it. Fields that do not apply yet (a task has no policy version) are null.
 */
export const Lineage = z.object({
  taskId: z.string().min(1),
  /** Sample index within a task's group (0 for records that are not per sample). */
  attempt: z.number().int().min(0),
  /** The loop run or data-job run that produced the record. */
  runId: z.string().min(1),
  policyVersion: z.number().int().min(0).nullable(),
  sandboxImageDigest: z.string().nullable(),
  verifierVersion: z.string().nullable(),
  /** ISO-8601 UTC time the record was created. */
  createdAt: z.iso.datetime(),
});
export type Lineage = z.infer<typeof Lineage>;

/** A file tree as a map from relative POSIX path to UTF-8 contents. */
export const FileTree = z.record(z.string().min(1), z.string());
export type FileTree = z.infer<typeof FileTree>;

export const nowIso = (): string => new Date().toISOString();
