import { isIP } from 'node:net';
import { ConfigError } from '../settings/config-error.js';
import { integer, list, optional, type Env } from '../settings/env.js';

/** Bounds on how long one client may hold a connection of the HTTP server (docs/decisions/requests-and-errors.md). */
export interface HttpServerConfig {
  /** From the first byte of a request until its headers are complete (HTTP_HEADERS_TIMEOUT_MS). */
  readonly headersTimeoutMs: number;
  /** From the first byte of a request until it has arrived in full, body included (HTTP_REQUEST_TIMEOUT_MS). */
  readonly requestTimeoutMs: number;
  /** How long an idle keep-alive connection waits for its next request (HTTP_KEEP_ALIVE_TIMEOUT_MS). */
  readonly keepAliveTimeoutMs: number;
}

/** A token bucket per organization: `perSecond` tokens a second, holding at most `burst` (RATE_LIMIT_PER_ORG, RATE_LIMIT_BURST). */
export interface RateLimitConfig {
  readonly perSecond: number;
  readonly burst: number;
}

/** A token bucket of failures per client address: `burst` failures at once, then `perMinute` a minute. */
export interface AuthFailureLimitConfig {
  readonly perMinute: number;
  readonly burst: number;
}

export function parseHttpServer(env: Env): HttpServerConfig {
  const headersTimeoutMs = integer(env, 'HTTP_HEADERS_TIMEOUT_MS', 10_000, 100, 600_000);
  const requestTimeoutMs = integer(env, 'HTTP_REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000);
  // Node refuses a headers timeout longer than the request timeout, and it would mean nothing.
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError('HTTP_HEADERS_TIMEOUT_MS', `must not exceed HTTP_REQUEST_TIMEOUT_MS (${requestTimeoutMs}), got ${headersTimeoutMs}`);
  }
  return { headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs: integer(env, 'HTTP_KEEP_ALIVE_TIMEOUT_MS', 5000, 100, 600_000) };
}

export function parseRateLimit(env: Env): RateLimitConfig | undefined {
  const perSecond = integer(env, 'RATE_LIMIT_PER_ORG', 0, 0, 1_000_000);
  if (perSecond === 0) {
    if (optional(env, 'RATE_LIMIT_BURST') !== undefined) throw new ConfigError('RATE_LIMIT_BURST', 'applies only with RATE_LIMIT_PER_ORG');
    return undefined;
  }
  return { perSecond, burst: integer(env, 'RATE_LIMIT_BURST', perSecond, 1, 1_000_000) };
}

export function parseAuthFailures(env: Env): AuthFailureLimitConfig | undefined {
  // 60 a minute after a burst of 30: a person mistyping or a client with a stale token never
  // meets it, and a flood of forged tokens from one address costs one verification a second.
  const perMinute = integer(env, 'AUTH_FAILURES_PER_MINUTE', 60, 0, 1_000_000);
  if (perMinute === 0) {
    if (optional(env, 'AUTH_FAILURES_BURST') !== undefined) throw new ConfigError('AUTH_FAILURES_BURST', 'applies only with AUTH_FAILURES_PER_MINUTE above 0');
    return undefined;
  }
  return { perMinute, burst: integer(env, 'AUTH_FAILURES_BURST', 30, 1, 1_000_000) };
}

/** TRUSTED_PROXIES: addresses or CIDR blocks (IPv4 or IPv6) of the proxies whose X-Forwarded-For is believed. */
export function parseTrustedProxies(env: Env): string[] {
  const entries = list(env, 'TRUSTED_PROXIES') ?? [];
  for (const entry of entries) {
    const [address, prefix, extra] = entry.split('/');
    const family = isIP(address ?? '');
    const bits = family === 6 ? 128 : 32;
    if (family === 0 || extra !== undefined || (prefix !== undefined && (!/^\d{1,3}$/.test(prefix) || Number(prefix) > bits))) {
      throw new ConfigError('TRUSTED_PROXIES', `"${entry}" is not an IP address or CIDR block`);
    }
  }
  return entries;
}
