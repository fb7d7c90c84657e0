import { performance } from 'node:perf_hooks';
import type { RateLimitConfig } from './http-settings.js';

export type RateVerdict = { readonly allowed: true } | { readonly allowed: false; readonly retryAfterSeconds: number };

/**
 * Requests per organization on this process, as token buckets. The failed-authentication
 * limit (src/http/auth-failure-guard.ts) keys the same buckets by client address.
 */
export interface OrgRateLimiter {
  /** Takes a token from the organization's bucket, or says how many whole seconds until one is there. */
  take(orgId: string): RateVerdict;
  /** What take() would answer, without taking: for a limit on failures, checked before the work that may fail. */
  peek(orgId: string): RateVerdict;
  /** Organizations whose bucket is not full, and so must be remembered. */
  readonly tracked: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * A bucket per organization holds up to `burst` tokens and gains `perSecond` a second;
 * a request takes one. A bucket that has filled up again is the same as none, so those
 * are forgotten whenever the map grows past the next sweep mark: memory follows the
 * organizations active in the last few seconds, not every one ever seen.
 *
 * `now` is in milliseconds and must not go backwards; the monotonic clock by default,
 * so that a wall-clock step neither refills nor drains the buckets.
 */
export function createOrgRateLimiter(limit: RateLimitConfig, now: () => number = () => performance.now()): OrgRateLimiter {
  const buckets = new Map<string, Bucket>();
  const SWEEP_FROM = 10_000;
  let sweepAt = SWEEP_FROM;

  function refill(bucket: Bucket, at: number): void {
    const elapsedSeconds = Math.max(0, at - bucket.at) / 1000;
    bucket.tokens = Math.min(limit.burst, bucket.tokens + elapsedSeconds * limit.perSecond);
    bucket.at = at;
  }

  function sweep(at: number): void {
    for (const [orgId, bucket] of buckets) {
      refill(bucket, at);
      if (bucket.tokens >= limit.burst) buckets.delete(orgId);
    }
    // When every bucket is busy, sweeping again on the next request would only cost time.
    sweepAt = Math.max(SWEEP_FROM, buckets.size * 2);
  }

  function verdictOf(bucket: Bucket): RateVerdict {
    // The refills are sums of fractions: ten tenths may add up to 0.9999999999999999.
    if (bucket.tokens >= 1 - 1e-9) return { allowed: true };
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / limit.perSecond)) };
  }

  return {
    peek(orgId) {
      const bucket = buckets.get(orgId);
      if (bucket === undefined) return { allowed: true };
      refill(bucket, now());
      return verdictOf(bucket);
    },
    take(orgId) {
      const at = now();
      let bucket = buckets.get(orgId);
      if (bucket === undefined) {
        if (buckets.size >= sweepAt) sweep(at);
        bucket = { tokens: limit.burst, at };
        buckets.set(orgId, bucket);
      } else refill(bucket, at);
      const verdict = verdictOf(bucket);
      if (verdict.allowed) bucket.tokens -= 1;
      return verdict;
    },
    get tracked() {
      return buckets.size;
    },
  };
}
