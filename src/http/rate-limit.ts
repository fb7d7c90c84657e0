import type { Middleware } from 'koa';
import { AppError } from '../errors/app-error.js';
import type { GatewayMetrics } from '../metrics/gateway-metrics.js';
import { authOf } from './authenticate.js';
import type { OrgRateLimiter } from './org-rate-limiter.js';
import type { GatewayState } from './state.js';
import { matchedRoute } from './matched-route.js';

/**
 * Spends one of the organization's tokens, or answers 429 with Retry-After. It goes
 * right after authenticate(): the organization is known and vouched for by then, and a
 * refused request costs no body parsing. Without a limiter it lets everything through.
 */
export function rateLimit(limiter: OrgRateLimiter | undefined, metrics: GatewayMetrics): Middleware<GatewayState> {
  return async (ctx, next) => {
    if (limiter === undefined) {
      await next();
      return;
    }
    const verdict = limiter.take(authOf(ctx.state).orgId);
    if (!verdict.allowed) {
      metrics.rateLimited.inc({ route: matchedRoute(ctx) ?? 'unmatched' });
      throw new AppError('RATE_LIMITED', 'Too many requests', {
        detail: `The organization's request rate limit is used up; retry in ${verdict.retryAfterSeconds} s.`,
        retryAfterSeconds: verdict.retryAfterSeconds,
      });
    }
    await next();
  };
}
