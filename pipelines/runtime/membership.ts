import { wholeNumber } from '../../schemas/index.js';

export const DEFAULT_SESSION_TIMEOUT_MS = 45_000;

/** How a processor instance (or the analytics sink) takes part in its consumer group. */
export interface MembershipOptions {
  /**
   * How long the group waits for an instance that stopped heartbeating before its partitions move on; an
   * instance restarted after a crash waits about this long to get them back. The broker allows 6000 at least
   * (group.min.session.timeout.ms). Heartbeats go every third of it, 3 s at most. @default 45000
   */
  sessionTimeoutMs?: number;
}

export interface ResolvedMembership {
  readonly sessionTimeoutMs: number;
  /** Also the beat kept up while a slow batch is handled, so a busy instance never looks dead. */
  readonly heartbeatIntervalMs: number;
}

/** `field` names the option in errors, e.g. "ProcessorOptions.sessionTimeoutMs of learner". */
export function resolveMembership(options: MembershipOptions, field: string): ResolvedMembership {
  const sessionTimeoutMs = options.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS;
  wholeNumber(field, sessionTimeoutMs, { min: 1 });
  return { sessionTimeoutMs, heartbeatIntervalMs: Math.min(3_000, Math.floor(sessionTimeoutMs / 3)) };
}
