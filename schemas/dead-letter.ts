import { z } from 'zod';

/** A record a processor could not handle, kept byte for byte with the reason, so nothing is lost. */
export const DeadLetter = z.object({
  processor: z.string().min(1),
  sourceTopic: z.string().min(1),
  partition: z.number().int().min(0),
  offset: z.string().min(1),
  /** Original key and value, base64; null when absent. */
  key: z.string().nullable(),
  value: z.string().nullable(),
  headers: z.record(z.string(), z.string()),
  error: z.object({
    name: z.string(),
    message: z.string(),
    retriable: z.boolean(),
    /** Where it failed: decoding, validation, or the handler. */
    stage: z.enum(['decode', 'validate', 'handle']),
  }),
  attempts: z.number().int().min(1),
  failedAt: z.iso.datetime(),
});
export type DeadLetter = z.infer<typeof DeadLetter>;
