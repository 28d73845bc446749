import { resolveRetryOptions, withRetries, type RetryOptions } from '../../schemas/index.js';
import type { Middleware } from './types.js';

/** Retries retriable failures of a record with backoff; everything else (and the last failure) propagates. */
export function retry(options: RetryOptions = {}): Middleware {
  const resolved = resolveRetryOptions(options);
  return (next) => (payload) => withRetries(() => next(payload), resolved, payload.signal);
}

/**
 * The retry budget of processors whose handlers run sandboxes: 8 retries, 0.5 s growing to 15 s, so 30-60 s
 * of waiting in all. Sandbox errors from the engine are retriable, and that is long enough to ride out a
 * Docker engine restart, so the record waits for the engine instead of going to the dead-letter topic.
 */
export const SANDBOX_RETRY: RetryOptions = { retries: 8, initialDelayMs: 500, maxDelayMs: 15_000 };
