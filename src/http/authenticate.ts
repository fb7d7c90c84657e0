import type { Middleware } from 'koa';
import { authorize, parseOrgIdHeader, type Permission } from '../auth/principal.js';
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

const SINGLE = ['authorization', 'org-id'] as const;

/**
 * A credential header sent twice is refused whatever the order: Node keeps the first
 * Authorization and joins ORG-IDs, and a proxy in front may keep the last, so two readers
 * of one request could see two callers. It is a malformed Authorization or ORG-ID, which
 * the decisions answer 401 (RFC 6750, 3.1 would say 400 `invalid_request`; the binding
 * decisions name every malformed credential header a 401).
 */
function refuseRepeated(rawHeaders: readonly string[]): void {
  const seen = new Set<string>();
  const repeated: Record<string, string> = {};
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    if (!(SINGLE as readonly string[]).includes(name)) continue;
    if (seen.has(name)) repeated[`header.${name}`] = 'must be sent once';
    seen.add(name);
  }
  if (Object.keys(repeated).length > 0) {
    throw new AppError('UNAUTHENTICATED', 'Unauthorized', { detail: 'A credential header is repeated.', fields: repeated });
  }
}

/**
 * 401 for a repeated credential header, and unless the request carries a valid bearer
 * token and a well-formed ORG-ID; 429 while the client's failed authentications are
 * used up (src/http/auth-failure-guard.ts); 403 unless the token grants `permission`.
 */
export function authenticate(verifier: TokenVerifier, permission: Permission): Middleware<GatewayState> {
  return async (ctx, next) => {
    refuseRepeated(ctx.req.rawHeaders);
    const guard = ctx.state.authGuard;
    const token = bearerToken(ctx.get('Authorization') || undefined);
    let principal = verifier.cached(token);
    if (principal === undefined) {
      // Only a token that costs a key operation is limited and counted: a missing or
      // malformed header is refused for nothing, and refusing it here would only let one
      // client behind a shared address use up the others' failures. A token verified here
      // before and not yet expired is a known caller's: it is let through to its full
      // verification while the address's failures are used up.
      if (!verifier.vouched(token)) guard?.admit();
      try {
        principal = await verifier.verify(token);
      } catch (error) {
        if (error instanceof AppError && error.code === 'UNAUTHENTICATED') guard?.failed();
        throw error;
      }
    }
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
