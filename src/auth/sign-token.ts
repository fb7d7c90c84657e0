import { SignJWT } from 'jose';

export interface TokenClaims {
  readonly sub: string;
  readonly orgIds: readonly string[];
  readonly scopes: readonly string[];
  readonly issuer?: string;
  readonly audience?: string;
  /** Lifetime in seconds. */
  readonly ttlSeconds?: number;
}

/** Mints an HS256 token; used by `npm run token` for the embedded default and by tests. */
export async function signHs256Token(secret: string, claims: TokenClaims): Promise<string> {
  let jwt = new SignJWT({ org_ids: [...claims.orgIds], scope: claims.scopes.join(' ') })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(claims.sub)
    .setIssuedAt()
    .setExpirationTime(`${claims.ttlSeconds ?? 3600}s`);
  if (claims.issuer !== undefined) jwt = jwt.setIssuer(claims.issuer);
  if (claims.audience !== undefined) jwt = jwt.setAudience(claims.audience);
  return jwt.sign(new TextEncoder().encode(secret));
}
