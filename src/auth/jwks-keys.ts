import { createLocalJWKSet, errors, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { AppError } from '../errors/app-error.js';
import { discoverJwksUrl } from './oidc-discovery.js';

/** The key set's URL (AUTH_JWKS_URL), or an OpenID issuer whose discovery document names it (AUTH_OIDC_ISSUER). */
export type JwksSource = URL | { readonly issuer: string };

export interface JwksKeysOptions {
  readonly url: JwksSource;
  /** The longest any one request waits on the endpoint. */
  readonly timeoutMs: number;
  /** At most one fetch starts per this interval once keys are known, whatever the outcome. */
  readonly cooldownMs: number;
  /** Keys older than this are refreshed in the background; they stay in use until a fetch succeeds. */
  readonly maxAgeMs: number;
  /** Tests move time forward instead of sleeping through cooldowns. */
  readonly now?: () => number;
  /** Tests count or stall fetches; defaults to the global fetch. */
  readonly fetch?: typeof fetch;
}

function unavailable(cause: unknown): AppError {
  return new AppError('UPSTREAM_UNAVAILABLE', 'token keys unavailable', {
    detail: 'Token verification keys are temporarily unavailable; retry shortly.',
    cause,
  });
}

/**
 * A JWKS key resolver that keeps the last good key set. jose's createRemoteJWKSet drops
 * its keys once they pass cacheMaxAge and the refetch fails, and its cooldown counts
 * only from a successful fetch, so a failing endpoint is asked again on every unknown
 * kid. Here the endpoint's health never takes away keys we already hold, and every
 * attempt, good or bad, starts the cooldown.
 */
export function createJwksKeys(options: JwksKeysOptions): JWTVerifyGetKey {
  const now = options.now ?? Date.now;
  const fetchImpl = options.fetch ?? fetch;
  let local: ReturnType<typeof createLocalJWKSet> | undefined;
  let fetchedAt = Number.NEGATIVE_INFINITY;
  let attemptedAt = Number.NEGATIVE_INFINITY;
  let lastAttemptFailed = false;
  let pending: Promise<void> | undefined;
  /** The jwks_uri found by discovery; forgotten when fetching it fails, so a moved key set is found again. */
  let discovered: URL | undefined;

  async function load(): Promise<void> {
    // One timeout covers discovery and the key set together: the bound on a request's wait stays one timeout.
    const signal = AbortSignal.timeout(options.timeoutMs);
    const source = options.url;
    const url = source instanceof URL ? source : (discovered ??= await discoverJwksUrl(source.issuer, fetchImpl, signal));
    try {
      const response = await fetchImpl(url, {
        // Redirects are not followed: the key set must come from the configured origin.
        redirect: 'manual',
        headers: { accept: 'application/json, application/jwk-set+json' },
        signal,
      });
      if (response.status !== 200) {
        await response.body?.cancel();
        throw new Error(`JWKS endpoint answered ${response.status}`);
      }
      // createLocalJWKSet validates the shape, so a malformed answer keeps the old keys.
      const next = createLocalJWKSet((await response.json()) as JSONWebKeySet);
      local = next;
      fetchedAt = now();
    } catch (error) {
      discovered = undefined;
      throw error;
    }
  }

  /** One fetch at a time; callers that arrive while one runs share it. */
  function refresh(): Promise<void> {
    if (pending === undefined) {
      attemptedAt = now();
      pending = load().then(
        () => {
          lastAttemptFailed = false;
        },
        (error: unknown) => {
          lastAttemptFailed = true;
          throw error;
        },
      );
      const settled = (): void => {
        pending = undefined;
      };
      pending.then(settled, settled);
    }
    return pending;
  }

  const coolingDown = (): boolean => now() < attemptedAt + options.cooldownMs;

  return async (protectedHeader, token) => {
    if (local === undefined) {
      // Nothing to fall back on: every request may try, one fetch at a time, each bounded
      // by the timeout. A cooldown here would only turn a blip at start into 30 s of 503s.
      try {
        await refresh();
      } catch (error) {
        throw unavailable(error);
      }
    } else if (now() >= fetchedAt + options.maxAgeMs && !coolingDown()) {
      // Stale keys still verify; the refresh runs beside the request, not in front of it.
      refresh().catch(() => undefined);
    }
    const keys = local;
    if (keys === undefined) throw unavailable(undefined);
    try {
      return await keys(protectedHeader, token);
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey)) throw error;
      // A fetch is under way (a burst, or a stale refresh): its answer is the newest we can get.
      if (pending === undefined && coolingDown()) {
        // We asked recently. If that failed we cannot say the key does not exist.
        if (lastAttemptFailed) throw unavailable(error);
        throw error;
      }
      try {
        await refresh();
      } catch (fetchError) {
        throw unavailable(fetchError);
      }
      if (local === undefined) throw unavailable(error);
      return local(protectedHeader, token);
    }
  };
}
