import type { Middleware } from 'koa';
import { authorize, parseOrgIdHeader, type Permission, type Principal } from '../auth/principal.js';
import type { TokenVerifier } from '../auth/token-verifier.js';
import { AppError } from '../errors/app-error.js';
import type { GatewayState } from './state.js';

function bearerToken(header: string | undefined): string {
  const match = header === undefined ? null : /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i.exec(header);
  if (match === null) {
    throw new AppError('UNAUTHENTICATED', 'Unauthorized', {
      detail: header === undefined ? 'The Authorization header is required.' : 'The Authorization header must be "Bearer <token>".',
    });
  }
  return match[1]!;
}

/** 401 unless the request carries a valid bearer token and a well-formed ORG-ID; 403 unless they grant `permission`. */
export function authenticate(verifier: TokenVerifier, permission: Permission): Middleware<GatewayState> {
  return async (ctx, next) => {
    const token = bearerToken(ctx.get('Authorization') || undefined);
    const principal: Principal = await verifier.verify(token);
    const orgId = parseOrgIdHeader(ctx.headers['org-id']);
    authorize(principal, orgId, permission);
    ctx.state.auth = { principal, orgId };
    await next();
  };
}

/** The caller, for routes behind authenticate(). */
export function authOf(state: GatewayState): NonNullable<GatewayState['auth']> {
  if (state.auth === undefined) throw new Error('route is not behind authenticate()');
  return state.auth;
}
