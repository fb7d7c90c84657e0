import { createPublicKey, type KeyObject } from 'node:crypto';
import { jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { AppError } from '../errors/app-error.js';
import { createJwksKeys, type JwksSource } from './jwks-keys.js';
import { principalFromClaims, type Principal } from './principal.js';
import { createVerifiedTokenCache } from './verified-token-cache.js';

export type VerificationKey =
  | { readonly kind: 'hs256'; readonly secret: string }
  | {
      readonly kind: 'jwks';
      readonly url: JwksSource;
      /** See createJwksKeys; the defaults match the AUTH_JWKS_* defaults in config. */
      readonly timeoutMs?: number;
      readonly cooldownMs?: number;
      readonly maxAgeMs?: number;
    }
  | { readonly kind: 'public-key'; readonly pem: string };

export const JWKS_DEFAULTS = { timeoutMs: 2000, cooldownMs: 30_000, maxAgeMs: 600_000 } as const;
export const DEFAULT_CLOCK_TOLERANCE_SECONDS = 30;
/** The longest `exp - iat` accepted unless configured (AUTH_MAX_TOKEN_LIFETIME_S): a day (docs/decisions/token-rules.md). */
export const DEFAULT_MAX_LIFETIME_SECONDS = 86_400;
/** See createVerifiedTokenCache: a minute bounds how long a withdrawn JWKS key outlives its fetch. */
export const TOKEN_CACHE_DEFAULTS = { maxEntries: 10_000, maxAgeMs: 60_000 } as const;

export interface TokenVerifierOptions {
  readonly key: VerificationKey;
  readonly issuer?: string | undefined;
  readonly audience?: string | undefined;
  /** Allowed clock skew for exp, nbf and iat, in seconds. */
  readonly clockToleranceSeconds?: number;
  /** The longest lifetime accepted: `exp - iat`, or `exp - now` for a token without `iat`. */
  readonly maxLifetimeSeconds?: number;
  /** The `typ` header every token must carry (RFC 8725, 3.11), compared as jose does; undefined checks none. */
  readonly tokenType?: string | undefined;
  /** The verifier's clock, in epoch milliseconds; tests set it instead of sleeping. */
  readonly now?: () => number;
  /** How JWKS keys are fetched, the global fetch unless set; tests count the fetches. */
  readonly fetch?: typeof fetch;
  /** Verified tokens remembered (src/auth/verified-token-cache.ts); false checks every token in full. */
  readonly cache?: { readonly maxEntries: number; readonly maxAgeMs: number } | false;
}

export interface TokenVerifier {
  /** Verifies a bearer token and reads its claims; throws AppError UNAUTHENTICATED (or 503 when keys cannot be fetched). */
  verify(token: string): Promise<Principal>;
  /** The caller of a token verified recently and still valid, without any key operation; undefined otherwise. */
  cached(token: string): Principal | undefined;
  /** Whether this verifier verified the token before and it has not expired since: a known caller's, though it is verified again in full. */
  vouched(token: string): boolean;
}

const ASYMMETRIC = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

/**
 * The algorithms a key may verify. Never 'none', and never an HS algorithm with a
 * public key: that is the classic confusion attack where the public key is used as an
 * HMAC secret.
 */
export function algorithmsForPublicKey(key: KeyObject): string[] {
  switch (key.asymmetricKeyType) {
    case 'rsa':
      return ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'];
    case 'rsa-pss':
      return ['PS256', 'PS384', 'PS512'];
    case 'ec': {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      if (curve === 'prime256v1') return ['ES256'];
      if (curve === 'secp384r1') return ['ES384'];
      if (curve === 'secp521r1') return ['ES512'];
      throw new Error(`unsupported EC curve ${String(curve)}`);
    }
    case 'ed25519':
      return ['EdDSA', 'Ed25519'];
    default:
      throw new Error(`unsupported public key type ${String(key.asymmetricKeyType)}`);
  }
}

const REASONS: Readonly<Record<string, string>> = {
  ERR_JWT_CLAIM_VALIDATION_FAILED: 'Bearer token is invalid.',
  ERR_JWT_EXPIRED: 'Bearer token has expired.',
  ERR_JWS_SIGNATURE_VERIFICATION_FAILED: 'Bearer token signature is invalid.',
  ERR_JOSE_ALG_NOT_ALLOWED: 'Bearer token algorithm is not allowed.',
  ERR_JWKS_NO_MATCHING_KEY: 'Bearer token was signed by an unknown key.',
  ERR_JWS_INVALID: 'Bearer token is malformed.',
  ERR_JWT_INVALID: 'Bearer token is malformed.',
  ERR_JOSE_NOT_SUPPORTED: 'Bearer token uses an unsupported algorithm.',
};

/** The one place jose's errors are read. */
function toAuthError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  const code = (error as { code?: unknown }).code;
  if (code === 'ERR_JWT_CLAIM_VALIDATION_FAILED') {
    const claim = String((error as { claim?: unknown }).claim);
    const reason = String((error as { reason?: unknown }).reason);
    const detail =
      claim === 'nbf' && reason === 'check_failed'
        ? 'Bearer token is not yet valid.'
        : reason === 'missing'
          ? `Bearer token has no "${claim}" claim.`
          : `Bearer token "${claim}" claim is not acceptable.`;
    return new AppError('UNAUTHENTICATED', 'Unauthorized', { detail, cause: error });
  }
  const detail = (typeof code === 'string' ? REASONS[code] : undefined) ?? 'Bearer token is invalid.';
  return new AppError('UNAUTHENTICATED', 'Unauthorized', { detail, cause: error });
}

function timeRefused(detail: string): AppError {
  return new AppError('UNAUTHENTICATED', 'Unauthorized', { detail });
}

/**
 * What jose leaves to us (RFC 8725, 3.10): jose checks exp and nbf, and iat only for a
 * type; a token issued in the future or living longer than the deployment allows would
 * otherwise pass. Without iat the remaining life counts, so leaving iat out gains nothing.
 */
function checkTimes(payload: JWTPayload, nowMs: number, toleranceSeconds: number, maxLifetimeSeconds: number): void {
  const now = nowMs / 1000;
  const { exp, iat } = payload;
  if (iat !== undefined && iat > now + toleranceSeconds) throw timeRefused('Bearer token was issued in the future.');
  const lifetime = exp! - (iat ?? now);
  if (lifetime > maxLifetimeSeconds) throw timeRefused(`Bearer token lives longer than the ${maxLifetimeSeconds} s this API accepts.`);
}

export function createTokenVerifier(options: TokenVerifierOptions): TokenVerifier {
  let key: Uint8Array | KeyObject | JWTVerifyGetKey;
  let algorithms: string[];
  switch (options.key.kind) {
    case 'hs256':
      key = new TextEncoder().encode(options.key.secret);
      algorithms = ['HS256'];
      break;
    case 'jwks':
      key = createJwksKeys({
        url: options.key.url,
        timeoutMs: options.key.timeoutMs ?? JWKS_DEFAULTS.timeoutMs,
        cooldownMs: options.key.cooldownMs ?? JWKS_DEFAULTS.cooldownMs,
        maxAgeMs: options.key.maxAgeMs ?? JWKS_DEFAULTS.maxAgeMs,
        ...(options.now === undefined ? {} : { now: options.now }),
        ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
      });
      algorithms = ASYMMETRIC;
      break;
    case 'public-key': {
      const publicKey = createPublicKey(options.key.pem);
      key = publicKey;
      algorithms = algorithmsForPublicKey(publicKey);
      break;
    }
  }
  const verifyOptions = {
    algorithms,
    clockTolerance: options.clockToleranceSeconds ?? DEFAULT_CLOCK_TOLERANCE_SECONDS,
    // RFC 8725, 3.10 and 4.10: a token without exp would be valid until its key is rotated.
    requiredClaims: ['sub', 'exp'],
    ...(options.tokenType === undefined ? {} : { typ: options.tokenType }),
    ...(options.issuer === undefined ? {} : { issuer: options.issuer }),
    ...(options.audience === undefined ? {} : { audience: options.audience }),
  };
  const clock = options.now ?? Date.now;
  const toleranceMs = verifyOptions.clockTolerance * 1000;
  const maxLifetimeSeconds = options.maxLifetimeSeconds ?? DEFAULT_MAX_LIFETIME_SECONDS;
  const cacheOptions = options.cache ?? TOKEN_CACHE_DEFAULTS;
  const cache = cacheOptions === false ? undefined : createVerifiedTokenCache({ ...cacheOptions, now: clock });
  return {
    cached(token) {
      return cache?.get(token);
    },
    vouched(token) {
      return cache?.vouched(token) ?? false;
    },
    async verify(token) {
      const cached = cache?.get(token);
      if (cached !== undefined) return cached;
      const now = options.now;
      const checkOptions = now === undefined ? verifyOptions : { ...verifyOptions, currentDate: new Date(now()) };
      try {
        const { payload } =
          typeof key === 'function'
            ? await jwtVerify(token, key, checkOptions)
            : await jwtVerify(token, key, checkOptions);
        checkTimes(payload, clock(), verifyOptions.clockTolerance, maxLifetimeSeconds);
        const principal = principalFromClaims(payload);
        // jose refuses a token from exp + tolerance on (and requires exp).
        cache?.set(token, principal, payload.exp! * 1000 + toleranceMs);
        return principal;
      } catch (error) {
        // A token vouched for until now (verified before, past the cache's age) stops being vouched for.
        cache?.forget(token);
        throw toAuthError(error);
      }
    },
  };
}
