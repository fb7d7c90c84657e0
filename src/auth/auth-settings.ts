import { ConfigError } from '../settings/config-error.js';
import { httpUrl, integer, optional, setAmong, type Env } from '../settings/env.js';
import { secretVariable } from '../settings/file-variables.js';
import type { JwksSource } from './jwks-keys.js';

export type AuthConfig =
  | { readonly kind: 'hs256'; readonly secret: string }
  | {
      readonly kind: 'jwks';
      /** AUTH_JWKS_URL, or AUTH_OIDC_ISSUER's issuer, whose discovery document names the key set. */
      readonly url: JwksSource;
      /** The longest a request waits on the endpoint; at most one fetch per cooldown; keys refreshed after max age. */
      readonly timeoutMs: number;
      readonly cooldownMs: number;
      readonly maxAgeMs: number;
    }
  | { readonly kind: 'public-key'; readonly pem: string }
  /** Embedded default only: a secret generated and kept under DATA_DIR. */
  | { readonly kind: 'development' };

export interface TokenRulesConfig {
  /** The longest `exp - iat` accepted (AUTH_MAX_TOKEN_LIFETIME_S). */
  readonly maxLifetimeSeconds: number;
  /** The `typ` header every token must carry (AUTH_TOKEN_TYPE), e.g. `at+jwt`; undefined checks none. */
  readonly type: string | undefined;
}

const MIN_HS256_SECRET_BYTES = 32;

const JWKS_SETTINGS = ['AUTH_JWKS_TIMEOUT_MS', 'AUTH_JWKS_COOLDOWN_MS', 'AUTH_JWKS_MAX_AGE_MS'] as const;

/** AUTH_OIDC_ISSUER: an http(s) URL with no query or fragment (OpenID Connect Discovery 1.0, section 2). */
function parseOidcIssuer(env: Env): string | undefined {
  const raw = optional(env, 'AUTH_OIDC_ISSUER');
  if (raw === undefined) return undefined;
  const url = httpUrl('AUTH_OIDC_ISSUER', raw);
  if (url.search !== '' || url.hash !== '' || raw.includes('?') || raw.includes('#')) throw new ConfigError('AUTH_OIDC_ISSUER', 'must have no query or fragment');
  // Kept as written: tokens must carry exactly this `iss`, and the discovery document must name it.
  return raw;
}

/** The required `iss`: AUTH_ISSUER, else the AUTH_OIDC_ISSUER whose keys verify the tokens. */
export function parseIssuer(env: Env): string | undefined {
  const issuer = optional(env, 'AUTH_ISSUER');
  const oidcIssuer = optional(env, 'AUTH_OIDC_ISSUER');
  if (issuer !== undefined && oidcIssuer !== undefined && issuer !== oidcIssuer) {
    throw new ConfigError('AUTH_ISSUER', `must equal AUTH_OIDC_ISSUER ("${oidcIssuer}") when both are set, got "${issuer}"`);
  }
  return issuer ?? oidcIssuer;
}

/** AUTH_TOKEN_TYPE: a media type's subtype as JWTs carry it in `typ` (RFC 8725, 3.11), e.g. at+jwt. */
function parseTokenType(env: Env): string | undefined {
  const raw = optional(env, 'AUTH_TOKEN_TYPE');
  if (raw === undefined) return undefined;
  if (!/^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}(\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126})?$/.test(raw)) {
    throw new ConfigError('AUTH_TOKEN_TYPE', `"${raw}" is not a media type such as at+jwt`);
  }
  return raw;
}

const AUTH_VARIABLES = 'AUTH_JWT_SECRET (or AUTH_JWT_SECRET_FILE), AUTH_JWKS_URL, AUTH_OIDC_ISSUER or AUTH_PUBLIC_KEY';

/** How tokens are verified; `embedded` (no Kafka, no ClickHouse server) allows the development secret unless `production`. */
export function parseAuth(env: Env, embedded: boolean, production: boolean): AuthConfig {
  const ways = setAmong(env, ['AUTH_JWT_SECRET', 'AUTH_JWT_SECRET_FILE', 'AUTH_JWKS_URL', 'AUTH_PUBLIC_KEY', 'AUTH_OIDC_ISSUER']);
  if (ways.length > 1) throw new ConfigError(ways.join(', '), 'set only one way to verify tokens');
  const jwksUrl = optional(env, 'AUTH_JWKS_URL');
  const publicKey = optional(env, 'AUTH_PUBLIC_KEY');
  const oidcIssuer = parseOidcIssuer(env);
  // A timing set for a key endpoint that is not configured is a mistake worth hearing about at start.
  const strayJwksSetting = JWKS_SETTINGS.find((name) => optional(env, name) !== undefined);
  if (jwksUrl === undefined && oidcIssuer === undefined && strayJwksSetting !== undefined) {
    throw new ConfigError(strayJwksSetting, 'applies only with AUTH_JWKS_URL or AUTH_OIDC_ISSUER');
  }
  const jwksTiming = () => ({
    timeoutMs: integer(env, 'AUTH_JWKS_TIMEOUT_MS', 2000, 100, 60_000),
    cooldownMs: integer(env, 'AUTH_JWKS_COOLDOWN_MS', 30_000, 0, 3_600_000),
    maxAgeMs: integer(env, 'AUTH_JWKS_MAX_AGE_MS', 600_000, 1000, 86_400_000),
  });
  if (oidcIssuer !== undefined) return { kind: 'jwks', url: { issuer: oidcIssuer }, ...jwksTiming() };
  const secret = secretVariable(env, 'AUTH_JWT_SECRET');
  if (secret !== undefined) {
    if (Buffer.byteLength(secret) < MIN_HS256_SECRET_BYTES) {
      throw new ConfigError(ways[0]!, `must be at least ${MIN_HS256_SECRET_BYTES} bytes for HS256`);
    }
    return { kind: 'hs256', secret };
  }
  if (jwksUrl !== undefined) {
    return { kind: 'jwks', url: httpUrl('AUTH_JWKS_URL', jwksUrl), ...jwksTiming() };
  }
  if (publicKey !== undefined) {
    // Accept a PEM with literal "\n" escapes, as env files often carry it on one line.
    const pem = publicKey.replace(/\\n/g, '\n');
    if (!pem.includes('-----BEGIN PUBLIC KEY-----')) {
      throw new ConfigError('AUTH_PUBLIC_KEY', 'must be a PEM "BEGIN PUBLIC KEY" block');
    }
    return { kind: 'public-key', pem };
  }
  if (!embedded) {
    throw new ConfigError(
      'AUTH_JWT_SECRET',
      `one of ${AUTH_VARIABLES} is required outside the embedded default`,
    );
  }
  if (production) {
    // The development secret is a file anyone who can read DATA_DIR can mint tokens with.
    throw new ConfigError(
      'NODE_ENV',
      `is production, which needs one of ${AUTH_VARIABLES}: the development secret is for development only`,
    );
  }
  return { kind: 'development' };
}

/** The token rules of RFC 8725 that are the deployment's to choose (AUTH_MAX_TOKEN_LIFETIME_S, AUTH_TOKEN_TYPE). */
export function parseTokenRules(env: Env): TokenRulesConfig {
  return {
    maxLifetimeSeconds: integer(env, 'AUTH_MAX_TOKEN_LIFETIME_S', 86_400, 60, 31_536_000),
    type: parseTokenType(env),
  };
}
