/**
 * When the client tries a call again and how long it waits first. Pure functions, apart
 * from the default sleep, so the schedule can be tested without a server or a clock.
 */

export interface RetryOptions {
  /** Tries per call, the first included; 1 turns retries off. Default 5. */
  readonly attempts?: number;
  /** Backoff before the first retry when the server gives no Retry-After. Default 100 ms. */
  readonly baseDelayMs?: number;
  /**
   * Longest single wait. A Retry-After asking for more than this is not waited out: the
   * call fails at once with the answer's CoreApiError, whose retryAfterMs tells the caller
   * when the server expects to be back. Default 5000 ms.
   */
  readonly maxDelayMs?: number;
  /** How the client waits; replace it to drive the schedule from a test or a scheduler. */
  readonly sleep?: Sleep;
  /** A number in [0, 1) for the jitter; Math.random unless given. */
  readonly random?: () => number;
  /** Current time in epoch ms, for Retry-After given as an HTTP-date; Date.now unless given. */
  readonly now?: () => number;
}

export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export interface RetryPolicy {
  readonly attempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly sleep: Sleep;
  readonly random: () => number;
  readonly now: () => number;
}

export const DEFAULT_RETRY = { attempts: 5, baseDelayMs: 100, maxDelayMs: 5000 } as const;

/**
 * The statuses that say "not now" rather than "not this request": 503 (the gateway could
 * not reach Kafka or its store in time, and says so with Retry-After) and 429 (a proxy or
 * a future rate limit). Every other status is the same answer on a second try.
 */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 503]);

export function resolveRetryPolicy(options: RetryOptions = {}): RetryPolicy {
  const attempts = options.attempts ?? DEFAULT_RETRY.attempts;
  const baseDelayMs = options.baseDelayMs ?? DEFAULT_RETRY.baseDelayMs;
  const maxDelayMs = options.maxDelayMs ?? DEFAULT_RETRY.maxDelayMs;
  // A bad policy would otherwise show up much later as a call that never retries or never ends.
  if (!Number.isInteger(attempts) || attempts < 1) throw new RangeError(`retry.attempts must be an integer of at least 1; got ${attempts}`);
  if (!Number.isFinite(baseDelayMs) || baseDelayMs < 0) throw new RangeError(`retry.baseDelayMs must be a finite number of at least 0; got ${baseDelayMs}`);
  if (!Number.isFinite(maxDelayMs) || maxDelayMs < baseDelayMs) {
    throw new RangeError(`retry.maxDelayMs must be finite and at least retry.baseDelayMs; got ${maxDelayMs}`);
  }
  return {
    attempts,
    baseDelayMs,
    maxDelayMs,
    sleep: options.sleep ?? sleep,
    random: options.random ?? Math.random,
    now: options.now ?? Date.now,
  };
}

const DELAY_SECONDS = /^\d+$/;

/**
 * Milliseconds a Retry-After header asks the client to wait (RFC 9110 10.2.3: whole
 * seconds, or an HTTP-date), or undefined when it is absent or unreadable, in which case
 * the caller falls back to its own backoff. A date in the past means "now".
 */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (text === '') return undefined;
  // Digits first: Date.parse would read "120" as the year 120.
  if (DELAY_SECONDS.test(text)) return Number(text) * 1000;
  // Only a date that names its weekday and month reads as an HTTP-date, not any text Date.parse happens to accept.
  if (!/[A-Za-z]{3}/.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

/**
 * Exponential backoff with full jitter (a uniform draw below the exponential cap): clients
 * that failed together spread out instead of returning together. `retry` counts from 1,
 * the wait before the first retry.
 */
export function backoffDelay(retry: number, policy: Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs' | 'random'>): number {
  const cap = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1));
  return Math.floor(policy.random() * cap);
}

export type RetryDecision = { readonly retry: true; readonly delayMs: number } | { readonly retry: false; readonly retryAfterMs: number | undefined };

/**
 * What to do after a retryable answer (503 or 429) on try `attempt`: wait as the server
 * asked, or back off when it did not say. Giving up when the server asks for more than
 * maxDelayMs keeps the caller's bound on a call, and waiting less than it asked would only
 * add load to a server that has said it cannot take it yet.
 */
export function decideAfterAnswer(attempt: number, retryAfterHeader: string | null, policy: RetryPolicy): RetryDecision {
  const retryAfterMs = parseRetryAfter(retryAfterHeader, policy.now());
  if (attempt >= policy.attempts) return { retry: false, retryAfterMs };
  if (retryAfterMs !== undefined) {
    return retryAfterMs > policy.maxDelayMs ? { retry: false, retryAfterMs } : { retry: true, delayMs: retryAfterMs };
  }
  return { retry: true, delayMs: backoffDelay(attempt, policy) };
}

/** setTimeout as a promise that an AbortSignal cuts short, so a cancelled call does not sit out its backoff. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
