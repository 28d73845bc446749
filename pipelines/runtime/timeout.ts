import { ShutdownError, TimeoutError } from '../../schemas/index.js';
import type { Middleware } from './types.js';

/**
 * Gives each try of a record `timeoutMs`. The handler's signal is aborted at the deadline so sandboxes
 * and fetches stop too, and the try fails with a retriable TimeoutError even if the handler ignores it.
 */
export function timeout(timeoutMs: number): Middleware {
  if (!(timeoutMs > 0)) throw new Error(`timeout: timeoutMs must be > 0, got ${timeoutMs}`);
  return (next) => async (payload) => {
    const deadline = new AbortController();
    const signal = AbortSignal.any([payload.signal, deadline.signal]);
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new TimeoutError(`handling ${payload.record.topic}[${payload.record.partition}]@${payload.record.offset}`, timeoutMs);
        // Reject before aborting: a handler that returns as soon as it sees the abort still timed out.
        reject(error);
        deadline.abort(error);
      }, timeoutMs);
    });
    try {
      return await Promise.race([next({ record: payload.record, signal }), expired]);
    } catch (error) {
      if (payload.signal.aborted) throw new ShutdownError();
      throw error;
    } finally {
      clearTimeout(timer);
    }
  };
}
