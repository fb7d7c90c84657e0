import type { Middleware } from 'koa';
import { AppError } from '../errors/app-error.js';
import type { ClientAddressOf } from './client-address.js';
import type { OrgRateLimiter } from './org-rate-limiter.js';
import type { GatewayState } from './state.js';

/**
 * Puts the client's AuthGuard on ctx.state for authenticate(). Each token that fails
 * verification (401) takes a token from the client address's bucket; while the bucket is empty, a token the gateway has
 * not verified recently is refused with 429 before its signature is checked, so a flood
 * of forged tokens costs one verification per refill, not one per request. A token
 * already verified (src/auth/verified-token-cache.ts) costs no key operation and still
 * passes. Without a limiter the guard admits everything.
 */
export function authFailureGuard(limiter: OrgRateLimiter | undefined, clientAddressOf: ClientAddressOf): Middleware<GatewayState> {
  return async (ctx, next) => {
    if (limiter !== undefined) {
      const address = clientAddressOf(ctx.req);
      ctx.state.authGuard = {
        admit() {
          const verdict = limiter.peek(address);
          if (!verdict.allowed) {
            throw new AppError('RATE_LIMITED', 'Too many requests', {
              detail: `Too many failed authentications from this client; retry in ${verdict.retryAfterSeconds} s.`,
              retryAfterSeconds: verdict.retryAfterSeconds,
            });
          }
        },
        failed() {
          limiter.take(address);
        },
      };
    }
    await next();
  };
}
