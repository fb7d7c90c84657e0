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
 * tokens at most `maxAgeMs` after it would have for uncached ones. The oldest entry makes
 * room for a new one once `maxEntries` are held, so the memory is bounded.
 */
export interface VerifiedTokenCache {
  get(token: string): Principal | undefined;
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
  readonly untilMs: number;
}

export function createVerifiedTokenCache(options: VerifiedTokenCacheOptions): VerifiedTokenCache {
  // A Map iterates in insertion order, so its first key is the oldest entry.
  const entries = new Map<string, Entry>();
  return {
    get(token) {
      const entry = entries.get(token);
      if (entry === undefined) return undefined;
      if (options.now() >= entry.untilMs) {
        entries.delete(token);
        return undefined;
      }
      return entry.principal;
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
      entries.set(token, { principal, untilMs });
    },
    get size() {
      return entries.size;
    },
  };
}
