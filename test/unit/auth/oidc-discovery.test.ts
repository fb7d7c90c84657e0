import { expect } from 'chai';
import { discoverJwksUrl, discoveryUrl } from '../../../src/auth/oidc-discovery.js';

/** A fetch that answers every request with `body` as JSON (or `status`), and records the URLs asked. */
function answering(body: unknown, status = 200): { fetch: typeof fetch; asked: string[] } {
  const asked: string[] = [];
  const impl = async (input: string | URL | Request): Promise<Response> => {
    asked.push(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  };
  return { fetch: impl, asked };
}

const signal = () => AbortSignal.timeout(1000);

describe('OpenID discovery of the key set', () => {
  it('asks the well-known path under the issuer, with or without its trailing slash', () => {
    expect(discoveryUrl('https://idp.example.com').href).to.equal('https://idp.example.com/.well-known/openid-configuration');
    expect(discoveryUrl('https://idp.example.com/tenant-1/').href).to.equal('https://idp.example.com/tenant-1/.well-known/openid-configuration');
  });

  it("returns the document's jwks_uri", async () => {
    const issuer = 'https://idp.example.com/tenant-1';
    const { fetch, asked } = answering({ issuer, jwks_uri: 'https://keys.example.com/tenant-1/jwks' });
    expect((await discoverJwksUrl(issuer, fetch, signal())).href).to.equal('https://keys.example.com/tenant-1/jwks');
    expect(asked).to.deep.equal(['https://idp.example.com/tenant-1/.well-known/openid-configuration']);
  });

  const refusals: [string, unknown, number, RegExp][] = [
    ['names another issuer', { issuer: 'https://evil.example.com', jwks_uri: 'https://evil.example.com/jwks' }, 200, /another issuer/],
    ['differs from the issuer by a trailing slash', { issuer: 'https://idp.example.com/', jwks_uri: 'https://idp.example.com/jwks' }, 200, /another issuer/],
    ['has no jwks_uri', { issuer: 'https://idp.example.com' }, 200, /no jwks_uri/],
    ['has a jwks_uri that is not a URL', { issuer: 'https://idp.example.com', jwks_uri: 'jwks' }, 200, /not a URL/],
    ['sends the keys of an https issuer over http', { issuer: 'https://idp.example.com', jwks_uri: 'http://idp.example.com/jwks' }, 200, /not https:/],
    ['is not an object', null, 200, /not a JSON object/],
    ['is not found', { error: 'not_found' }, 404, /answered 404/],
  ];
  for (const [what, body, status, reason] of refusals) {
    it(`refuses a document that ${what}`, async () => {
      const error = await discoverJwksUrl('https://idp.example.com', answering(body, status).fetch, signal()).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(error?.message).to.match(reason);
    });
  }
});
