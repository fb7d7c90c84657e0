import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import { SignJWT, exportJWK, generateKeyPair, type JWK } from 'jose';
import { createTokenVerifier } from '../../../src/auth/token-verifier.js';
import { AppError } from '../../../src/errors.js';

/** AUTH_JWKS_URL: keys fetched from a real HTTP endpoint on loopback. */
describe('token verification against a JWKS endpoint', () => {
  let server: Server;
  let url: URL;
  let keys: { keys: JWK[] };
  let privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
  let serving = true;

  before(async () => {
    const pair = await generateKeyPair('RS256', { extractable: true });
    privateKey = pair.privateKey;
    keys = { keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }] };
    server = createServer((req, res) => {
      if (!serving) {
        req.socket.destroy();
        return;
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(keys));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = new URL(`http://127.0.0.1:${(server.address() as { port: number }).port}/jwks.json`);
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  const sign = (kid: string) =>
    new SignJWT({ org_ids: ['aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa'], scope: 'events:read' })
      .setProtectedHeader({ alg: 'RS256', kid })
      .setSubject('svc')
      .setExpirationTime('5m')
      .sign(privateKey);

  async function failure(promise: Promise<unknown>): Promise<AppError> {
    try {
      await promise;
    } catch (error) {
      return error as AppError;
    }
    throw new Error('expected a rejection');
  }

  it('verifies a token signed by a published key', async () => {
    const principal = await createTokenVerifier({ key: { kind: 'jwks', url } }).verify(await sign('k1'));
    expect(principal.subject).to.equal('svc');
  });

  it('is a 401 for a key id the endpoint does not publish', async () => {
    const error = await failure(createTokenVerifier({ key: { kind: 'jwks', url } }).verify(await sign('unknown')));
    expect(error.code).to.equal('UNAUTHENTICATED');
    expect(error.detail).to.match(/unknown key/);
  });

  it('is a 503, not a 401, when the keys cannot be fetched', async () => {
    serving = false;
    try {
      const error = await failure(createTokenVerifier({ key: { kind: 'jwks', url } }).verify(await sign('k1')));
      expect(error.code).to.equal('UPSTREAM_UNAVAILABLE');
      expect(error.status).to.equal(503);
    } finally {
      serving = true;
    }
  });
});
