import { errorMessage, HostUnavailableError, ShutdownError } from '../../schemas/index.js';
import type { Middleware } from './types.js';

/** A probe for ProcessorOptions.hostAvailable: true while every given probe answers true (probes left undefined are skipped). */
export function allAnswer(...probes: ReadonlyArray<(() => Promise<boolean>) | undefined>): (() => Promise<boolean>) | undefined {
  const given = probes.filter((probe): probe is () => Promise<boolean> => probe !== undefined);
  if (given.length === 0) return undefined;
  return async () => (await Promise.all(given.map((probe) => probe()))).every(Boolean);
}

/**
 * A probe of a blob store (a checkpoint or tree store; S3 behind them): one request, true when it answers. A local
 * folder always answers. Asked after a failed try, it tells an S3 outage (the record is not at fault: its transaction
 * is aborted, nothing is dead-lettered) from a bad record (a missing object, a digest mismatch: dead-lettered).
 * No store, no probe (allAnswer skips it).
 */
export function storeAnswers(store: { check(): Promise<void> }): () => Promise<boolean>;
export function storeAnswers(store: { check(): Promise<void> } | null | undefined): (() => Promise<boolean>) | undefined;
export function storeAnswers(store: { check(): Promise<void> } | null | undefined): (() => Promise<boolean>) | undefined {
  if (!store) return undefined;
  return () => store.check().then(() => true, () => false);
}

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
