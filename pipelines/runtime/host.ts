import { errorMessage, HostUnavailableError, ShutdownError } from '../../schemas/index.js';
import type { Middleware } from './types.js';

/**
 * Asks whether the host is up after every failed try of a record, inside the retry middleware: a failure on a
 * host whose engine does not answer becomes a HostUnavailableError, which is neither retried here nor
 * dead-lettered; the processor leaves its group with the record uncommitted, for a healthy member to redo.
 */
export function hostGuard(what: string, hostAvailable: () => Promise<boolean>): Middleware {
  return (next) => async (payload) => {
    try {
      return await next(payload);
    } catch (error) {
      if (error instanceof ShutdownError || error instanceof HostUnavailableError || payload.signal.aborted) throw error;
      if (!(await hostAvailable())) throw new HostUnavailableError(`${what} failed (${errorMessage(error)})`, error);
      throw error;
    }
  };
}
