import { readFile } from 'node:fs/promises';
import type { OauthbearerProviderResponse } from 'kafkajs';
import type { OAuthTokenSource } from './kafka-security-config.js';

/** Why no token could be had. The message is safe to show: it never holds a secret or a token. */
export class OAuthTokenError extends Error {
  override readonly name = 'OAuthTokenError';
}

/** kafkajs sends `extensions` along with the token, though its type names only `value`. */
export interface OAuthToken extends OauthbearerProviderResponse {
  readonly extensions?: Readonly<Record<string, string>>;
}

export type OAuthTokenProvider = () => Promise<OAuthToken>;

/** A fetched token is used until this share of its lifetime has passed, as Kafka's Java client does by default. */
const REFRESH_AT_LIFETIME_SHARE = 0.8;
/**
 * ...or until this close to its expiry, whichever comes first. A broker with
 * connections.max.reauth.ms ends a session when its token expires, and kafkajs logs in
 * again before every request once less than its reauthenticationThreshold (10 s) is
 * left; with a token that near its end every request became a login, and the broker
 * answered some of them with ILLEGAL_SASL_STATE: 503s for 2 s of a 40 s token's life
 * in test/integration/identity-provider/kafka-oauthbearer.test.ts.
 */
const REFRESH_BEFORE_EXPIRY_S = 30;
/** ...but never before half of it, so a short-lived token is not fetched for every login. */
const MIN_LIFETIME_SHARE = 0.5;

/** How long a token that lives `lifetimeS` is used before a new one is fetched. */
export function tokenReuseMs(lifetimeS: number): number {
  const seconds = Math.min(lifetimeS * REFRESH_AT_LIFETIME_SHARE, Math.max(lifetimeS * MIN_LIFETIME_SHARE, lifetimeS - REFRESH_BEFORE_EXPIRY_S));
  return seconds * 1000;
}
/** Lifetime assumed for a token whose endpoint does not say (no expires_in). */
const DEFAULT_LIFETIME_S = 300;
const TOKEN_REQUEST_TIMEOUT_MS = 10_000;

function fileTokenProvider(path: string, extensions: OAuthToken['extensions']): OAuthTokenProvider {
  return async () => {
    let value: string;
    try {
      value = (await readFile(path, 'utf8')).trim();
    } catch (error) {
      throw new OAuthTokenError(`cannot read KAFKA_SASL_OAUTH_TOKEN_FILE (${(error as NodeJS.ErrnoException).code ?? 'unreadable'})`);
    }
    if (value === '') throw new OAuthTokenError('KAFKA_SASL_OAUTH_TOKEN_FILE is empty');
    return { value, ...(extensions === undefined ? {} : { extensions }) };
  };
}

/** application/x-www-form-urlencoded, which RFC 6749 (2.3.1) asks for before the Basic header is built. */
function formEncoded(text: string): string {
  return new URLSearchParams([['x', text]]).toString().slice(2);
}

interface CachedToken {
  readonly value: string;
  readonly refreshAt: number;
}

/** What the token provider reaches outside itself for; tests pass their own. */
export interface OAuthTokenProviderOptions {
  /** Defaults to the global fetch. */
  readonly fetchToken?: typeof fetch;
  /** Epoch milliseconds, Date.now by default: a test moves it past a token's refresh point instead of sleeping. */
  readonly now?: () => number;
}

async function requestToken(
  source: Extract<OAuthTokenSource, { kind: 'client-credentials' }>,
  fetchToken: typeof fetch,
  now: () => number,
): Promise<CachedToken> {
  const endpoint = new URL(source.url).host;
  const body = new URLSearchParams({ grant_type: 'client_credentials' });
  if (source.scope !== undefined) body.set('scope', source.scope);
  const basic = Buffer.from(`${formEncoded(source.clientId)}:${formEncoded(source.clientSecret)}`).toString('base64');
  let response: Response;
  try {
    response = await fetchToken(source.url, {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body,
      signal: AbortSignal.timeout(TOKEN_REQUEST_TIMEOUT_MS),
    });
  } catch (error) {
    const timedOut = (error as Error).name === 'TimeoutError';
    throw new OAuthTokenError(timedOut ? `token endpoint ${endpoint} did not answer within ${TOKEN_REQUEST_TIMEOUT_MS} ms` : `token endpoint ${endpoint} is not reachable`);
  }
  const answer = (await response.json().catch(() => undefined)) as { access_token?: unknown; expires_in?: unknown; error?: unknown } | undefined;
  if (!response.ok) {
    // The standard error code (e.g. invalid_client) says what to fix; free text from the endpoint is not repeated.
    const code = typeof answer?.error === 'string' && /^[a-z_]{1,64}$/.test(answer.error) ? ` (${answer.error})` : '';
    throw new OAuthTokenError(`token endpoint ${endpoint} answered ${response.status}${code}`);
  }
  if (typeof answer?.access_token !== 'string' || answer.access_token === '') {
    throw new OAuthTokenError(`token endpoint ${endpoint} answered without an access_token`);
  }
  const lifetimeS = typeof answer.expires_in === 'number' && answer.expires_in > 0 ? answer.expires_in : DEFAULT_LIFETIME_S;
  return { value: answer.access_token, refreshAt: now() + tokenReuseMs(lifetimeS) };
}

function clientCredentialsProvider(
  source: Extract<OAuthTokenSource, { kind: 'client-credentials' }>,
  extensions: OAuthToken['extensions'],
  fetchToken: typeof fetch,
  now: () => number,
): OAuthTokenProvider {
  let cached: CachedToken | undefined;
  let pending: Promise<CachedToken> | undefined;
  return async () => {
    if (cached === undefined || now() >= cached.refreshAt) {
      // Connections to several brokers authenticate at once; they share one request.
      pending ??= requestToken(source, fetchToken, now).finally(() => {
        pending = undefined;
      });
      cached = await pending;
    }
    return { value: cached.value, ...(extensions === undefined ? {} : { extensions }) };
  };
}

/**
 * The `oauthBearerProvider` kafkajs calls whenever a connection authenticates (and
 * re-authenticates). A token file is read again each time, so whatever keeps it fresh is
 * followed; a token from the endpoint is reused until most of its lifetime has passed
 * (tokenReuseMs).
 */
export function createOAuthTokenProvider(
  source: OAuthTokenSource,
  extensions: OAuthToken['extensions'],
  options: OAuthTokenProviderOptions = {},
): OAuthTokenProvider {
  if (source.kind === 'file') return fileTokenProvider(source.path, extensions);
  return clientCredentialsProvider(source, extensions, options.fetchToken ?? fetch, options.now ?? Date.now);
}
