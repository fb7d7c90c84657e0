import type { Principal } from './principal.js';

/**
 * Verdicts on tokens that verified, keyed by the whole token string (signature included,
 * so a forged variant of a cached token is a miss and goes through full verification).
 * A caller sends the same token with every request until it expires, and verifying it
 * (base64, JSON, HMAC or a signature check through WebCrypto) was about a third of the
 * gateway's CPU per command request; a hit is a Map lookup.
 *
 * Only successes are stored: a refused token is checked again every time. An entry ends
 * when the token would stop verifying (its exp plus the clock tolerance) or after
 * `maxAgeMs`, whichever is first, so a key withdrawn from a JWKS stops working for cached
 * tokens at most `maxAgeMs` after it would have for uncached ones. Past `maxAgeMs` the
 * entry still vouches for its token until that validity ends: a token this process has
 * verified is a caller's, not a forger's, and the failure guard (src/http/auth-failure-guard.ts)
 * lets it through to a full verification where it refuses unknown tokens, so a client
 * that floods forged tokens from a shared address does not lock out the callers already
 * working beside it. The oldest entry makes room for a new one once `maxEntries` are held,
 * so the memory is bounded.
 */
export interface VerifiedTokenCache {
  get(token: string): Principal | undefined;
  /** Whether the token verified here before and has not reached its validity's end, whatever the max age. */
  vouched(token: string): boolean;
  /** Forgets the token: a full verification of it failed (its key withdrawn, say), so it vouches for nothing. */
  forget(token: string): void;
  /** Remembers a verified token; `validUntilMs` is when a verifier would first refuse it (epoch ms). */
  set(token: string, principal: Principal, validUntilMs: number): void;
  readonly size: number;
}

export interface VerifiedTokenCacheOptions {
  readonly maxEntries: number;
  readonly maxAgeMs: number;
  /** Epoch milliseconds; tests set it instead of sleeping. */
  readonly now: () => number;
}

interface Entry {
  readonly principal: Principal;
  /** Served until then: the earlier of its validity's end and the max age. */
  readonly untilMs: number;
  /** Vouched for until then. */
  readonly validUntilMs: number;
}

export function createVerifiedTokenCache(options: VerifiedTokenCacheOptions): VerifiedTokenCache {
  // A Map iterates in insertion order, so its first key is the oldest entry.
  const entries = new Map<string, Entry>();
  return {
    get(token) {
      const entry = entries.get(token);
      if (entry === undefined) return undefined;
      const now = options.now();
      if (now >= entry.untilMs) {
        if (now >= entry.validUntilMs) entries.delete(token);
        return undefined;
      }
      return entry.principal;
    },
    forget(token) {
      entries.delete(token);
    },
    vouched(token) {
      const entry = entries.get(token);
      if (entry === undefined) return false;
      if (options.now() < entry.validUntilMs) return true;
      entries.delete(token);
      return false;
    },
    set(token, principal, validUntilMs) {
      if (options.maxEntries <= 0) return;
      const now = options.now();
      const untilMs = Math.min(validUntilMs, now + options.maxAgeMs);
      if (untilMs <= now) return;
      entries.delete(token);
      while (entries.size >= options.maxEntries) {
        const oldest = entries.keys().next();
        if (oldest.done === true) break;
        entries.delete(oldest.value);
      }
      entries.set(token, { principal, untilMs, validUntilMs });
    },
    get size() {
      return entries.size;
    },
  };
}
