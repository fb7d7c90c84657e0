/**
 * OpenID Connect Discovery 1.0: where an issuer publishes its keys. The gateway reads
 * `jwks_uri` from the issuer's discovery document instead of being told the key set's
 * URL, so a provider that moves its key set is followed without a configuration change.
 */

/** The document's URL: the issuer with any trailing slash removed, then the well-known path (Discovery 1.0, 4). */
export function discoveryUrl(issuer: string): URL {
  return new URL(`${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`);
}

/**
 * Fetches the issuer's discovery document and returns its `jwks_uri`. The document must
 * name exactly this issuer (Discovery 1.0, 4.3): otherwise one provider could hand out
 * keys for another's tokens. Errors say what was wrong, never what the endpoint sent.
 */
export async function discoverJwksUrl(issuer: string, fetchImpl: typeof fetch, signal: AbortSignal): Promise<URL> {
  const url = discoveryUrl(issuer);
  const response = await fetchImpl(url, {
    // Like the key set itself, the document must come from the issuer's own origin.
    redirect: 'manual',
    headers: { accept: 'application/json' },
    signal,
  });
  if (response.status !== 200) {
    await response.body?.cancel();
    throw new Error(`OpenID discovery document answered ${response.status}`);
  }
  const document = (await response.json()) as { issuer?: unknown; jwks_uri?: unknown } | null;
  if (document === null || typeof document !== 'object') throw new Error('OpenID discovery document is not a JSON object');
  if (document.issuer !== issuer) throw new Error('OpenID discovery document names another issuer');
  if (typeof document.jwks_uri !== 'string') throw new Error('OpenID discovery document has no jwks_uri');
  let jwksUrl: URL;
  try {
    jwksUrl = new URL(document.jwks_uri);
  } catch {
    throw new Error('OpenID discovery document has a jwks_uri that is not a URL');
  }
  // An https issuer whose keys came over plain http would be only as safe as the network.
  const allowed = url.protocol === 'https:' ? ['https:'] : ['https:', 'http:'];
  if (!allowed.includes(jwksUrl.protocol)) throw new Error(`OpenID discovery document has a jwks_uri that is not ${allowed.join(' or ')}`);
  return jwksUrl;
}
