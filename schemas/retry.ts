import { finiteNumber, wholeNumber } from './check.js';
import { isRetriable, ShutdownError } from './errors.js';

/**
 * The one retry loop. It reads the `retriable` flag of the errors in errors.ts: the stream-processor
 * middleware wraps handlers with it, and clients of remote services (an LLM server) call it directly.
 */
export interface RetryOptions {
  /** Tries after the first one, for retriable errors only. @default 3 */
  retries?: number;
  /** Delay before the first retry. @default 200 */
  initialDelayMs?: number;
  /** Cap on any one delay. @default 5000 */
  maxDelayMs?: number;
  /** Growth of the delay per retry. @default 2 */
  factor?: number;
}

export interface ResolvedRetryOptions {
  readonly retries: number;
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  readonly factor: number;
}

export function resolveRetryOptions(options: RetryOptions = {}): ResolvedRetryOptions {
  const resolved = { retries: 3, initialDelayMs: 200, maxDelayMs: 5000, factor: 2, ...options };
  wholeNumber('RetryOptions.retries', resolved.retries, { min: 0 });
  finiteNumber('RetryOptions.initialDelayMs', resolved.initialDelayMs, { min: 0 });
  finiteNumber('RetryOptions.maxDelayMs', resolved.maxDelayMs, { min: resolved.initialDelayMs });
  finiteNumber('RetryOptions.factor', resolved.factor, { min: 1 });
  return resolved;
}

const attempts = new WeakMap<object, number>();

/** How many times the failing work was tried before this error was thrown (1 when never retried). */
export function attemptsOf(error: unknown): number {
  return typeof error === 'object' && error !== null ? (attempts.get(error) ?? 1) : 1;
}

/** Full-jitter exponential backoff, so that many failing workers do not retry in step. */
export function backoffDelay(options: ResolvedRetryOptions, retry: number, random: () => number = Math.random): number {
  const ceiling = Math.min(options.maxDelayMs, options.initialDelayMs * options.factor ** retry);
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new ShutdownError());
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new ShutdownError());
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Settles as `work` does, or rejects with `expired()` once `ms` have passed, whichever comes first. `work` is
 * not stopped: a caller that must stop it aborts it when the deadline error arrives.
 */
export async function withDeadline<T>(work: Promise<T>, ms: number, expired: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(expired()), ms)));
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs `work` until it succeeds, an error `retryIf` refuses is thrown, or the retries are spent. A retried
 * error may ask for a minimum wait (`retryAfterMs`, e.g. from HTTP Retry-After). `retryIf` defaults to the
 * errors' own `retriable` flag; a client passes its own to retry one condition its library leaves to callers.
 * It also gets the number of the try that failed (0 for the first), so that a condition can have fewer retries
 * than `options.retries`, the most any error gets.
 */
export async function withRetries<T>(
  work: (attempt: number) => Promise<T>,
  options: ResolvedRetryOptions,
  signal: AbortSignal,
  retryIf: (error: unknown, attempt: number) => boolean = isRetriable,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await work(attempt);
    } catch (error) {
      if (error instanceof ShutdownError || signal.aborted) throw error;
      if (attempt >= options.retries || !retryIf(error, attempt)) {
        if (typeof error === 'object' && error !== null) attempts.set(error, attempt + 1);
        throw error;
      }
      const asked = (error as { retryAfterMs?: unknown }).retryAfterMs;
      await sleep(Math.max(backoffDelay(options, attempt), typeof asked === 'number' ? asked : 0), signal);
    }
  }
}
