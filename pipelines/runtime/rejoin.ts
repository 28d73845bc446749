import { errorMessage, ShutdownError, sleep } from '../../schemas/index.js';

/** How long a consumer that stopped for good waits before it joins its group again. */
export const CRASH_REJOIN_DELAY_MS = 5_000;

export interface RejoinSteps {
  /** Leaves what is left of the crashed membership: disconnects, drops what the old assignment held. */
  leave(): Promise<void>;
  /** Joins the group again as a fresh member. */
  join(): Promise<void>;
}

/**
 * What a group member does once its consumer stopped for good (the client gave up on an error it met, e.g. while
 * a killed broker's partitions moved): it is no member any more and its partitions wait for the session timeout.
 * It leaves, waits `delayMs` and joins again, as often as that takes, until `signal` aborts. A leave or join that
 * fails is reported on stderr under `what` and tried again, never faster than once per `delayMs`. Used by the
 * stream processor and the analytics sink.
 */
export async function rejoinAfterCrash(what: string, cause: Error, steps: RejoinSteps, signal: AbortSignal, delayMs = CRASH_REJOIN_DELAY_MS): Promise<void> {
  process.stderr.write(`${what}: its consumer stopped (${errorMessage(cause)}); rejoining the group\n`);
  for (;;) {
    let waited = false;
    try {
      await steps.leave();
      await sleep(delayMs, signal);
      waited = true;
      await steps.join();
      return;
    } catch (error) {
      if (error instanceof ShutdownError || signal.aborted) return;
      process.stderr.write(`${what}: rejoining failed (${errorMessage(error)}); trying again\n`);
      if (!waited) await sleep(delayMs, signal).catch(() => undefined);
    }
  }
}
