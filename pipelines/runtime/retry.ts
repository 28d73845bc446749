import { resolveRetryOptions, withRetries, type RetryOptions } from '../../schemas/index.js';
import type { Middleware } from './types.js';

/** Retries retriable failures of a record with backoff; everything else (and the last failure) propagates. */
export function retry(options: RetryOptions = {}): Middleware {
  const resolved = resolveRetryOptions(options);
  return (next) => (payload) => withRetries(() => next(payload), resolved, payload.signal);
}
