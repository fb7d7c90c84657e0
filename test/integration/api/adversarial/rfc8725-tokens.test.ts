import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { uuid } from '../../../support/factories.js';
import { describeInEveryKeyMode, expectRefusal, feedWith, keyServerState, MAX_LIFETIME_S, type ModeGateway } from './key-modes.js';

/**
 * RFC 8725 (JSON Web Token Best Current Practices), section by section, against a real
 * gateway in each of the four key modes. Every token is correctly signed with the key the
 * gateway trusts unless the probe is about the signature, so each refusal is the rule's.
 */
const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
const now = (): number => Math.floor(Date.now() / 1000);

describeInEveryKeyMode('RFC 8725 token probes', (mg: () => ModeGateway) => {
  const orgId = uuid();

  it('accepts a token with every claim right (the baseline every refusal below differs from)', async () => {
    const answer = await feedWith(mg(), await mg().token(orgId), orgId);
    expect(answer.status, answer.text).to.equal(200);
  });

  describe('3.1 algorithm verification', () => {
    it('refuses alg "none", with and without a signature part', async () => {
      const unsigned = `${b64({ alg: 'none', typ: 'at+jwt' })}.${b64({ sub: 'x', org_ids: [orgId], scope: 'events:read', iss: mg().issuer, aud: 'core-api', exp: now() + 60, iat: now() })}`;
      for (const token of [`${unsigned}.`, unsigned]) expectRefusal(await feedWith(mg(), token, orgId), 401);
    });

    it('refuses an HMAC token keyed with the public key text (algorithm confusion), or with a guessed secret', async () => {
      const material = mg().publicPem ?? 'a guessed secret of at least thirty-two bytes';
      const forged = await new SignJWT({ sub: 'x', org_ids: [orgId], scope: 'events:read', iss: mg().issuer, aud: 'core-api', iat: now(), exp: now() + 60 })
        .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: 'k1' })
        .sign(new TextEncoder().encode(material));
      expectRefusal(await feedWith(mg(), forged, orgId), 401, /not allowed|signature is invalid/);
    });

    it('refuses a token whose signature was altered', async () => {
      const token = await mg().token(orgId);
      const [h, p, s] = token.split('.') as [string, string, string];
      const flipped = `${s.slice(0, -4)}${s.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}`;
      expectRefusal(await feedWith(mg(), `${h}.${p}.${flipped}`, orgId), 401);
      // The payload changed under the old signature: another organization claimed.
      const other = b64({ ...(JSON.parse(Buffer.from(p, 'base64url').toString()) as object), org_ids: [uuid()] });
      expectRefusal(await feedWith(mg(), `${h}.${other}.${s}`, orgId), 401, /signature is invalid/);
    });
  });

  describe('3.5 / 3.10 keys named by the token are not used', () => {
    let attackerServer: Server;
    let attackerHits = 0;
    let attackerOrigin = '';
    before(async () => {
      attackerServer = createServer((_req, res) => {
        attackerHits += 1;
        res.end('{}');
      });
      await new Promise<void>((resolve) => attackerServer.listen(0, '127.0.0.1', resolve));
      attackerOrigin = `http://127.0.0.1:${(attackerServer.address() as { port: number }).port}`;
    });
    after(() => new Promise<void>((resolve) => attackerServer.close(() => resolve())));

    it('ignores jwk, jku and x5u in the header: a token signed by the key it names is refused and no URL in it is fetched', async () => {
      const attacker = await generateKeyPair('RS256', { extractable: true });
      const jwk = { ...(await exportJWK(attacker.publicKey)), kid: 'k1' };
      const token = await new SignJWT({ sub: 'x', org_ids: [orgId], scope: 'events:read', iss: mg().issuer, aud: 'core-api', iat: now(), exp: now() + 60 })
        .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: 'k1', jwk, jku: `${attackerOrigin}/jwks.json`, x5u: `${attackerOrigin}/cert.pem` })
        .sign(attacker.privateKey);
      const fetchesBefore = keyServerState().hits.get('/jwks.json') ?? 0;
      expectRefusal(await feedWith(mg(), token, orgId), 401);
      expect(attackerHits).to.equal(0);
      // The gateway's own key set is not fetched again for a kid it knows either.
      expect(keyServerState().hits.get('/jwks.json') ?? 0).to.equal(fetchesBefore);
    });
  });

  describe('3.9 / 3.10 issuer and audience, exactly', () => {
    for (const [what, claims] of [
      ['another issuer', { iss: 'https://evil.test' }],
      ['the issuer with a trailing slash', { iss: 'ISSUER/' }],
      ['no issuer', { iss: undefined }],
      ['another audience', { aud: 'other-api' }],
      ['no audience', { aud: undefined }],
    ] as const) {
      it(`refuses ${what}`, async () => {
        const iss = (claims as { iss?: string }).iss;
        const adjusted = iss === 'ISSUER/' ? { ...claims, iss: `${mg().issuer}/` } : claims;
        expectRefusal(await feedWith(mg(), await mg().token(orgId, adjusted), orgId), 401, /"(iss|aud)" claim/);
      });
    }
  });

  describe('3.10 / 4.10 time claims', () => {
    it('refuses a token without exp, which would otherwise be valid until the key is rotated', async () => {
      expectRefusal(await feedWith(mg(), await mg().token(orgId, { exp: undefined }), orgId), 401, /no "exp" claim/);
    });

    it('refuses a token expired beyond the clock tolerance', async () => {
      expectRefusal(await feedWith(mg(), await mg().token(orgId, { iat: now() - 700, exp: now() - 120 }), orgId), 401, /expired/);
    });

    it('refuses iat and nbf in the future beyond the clock tolerance, up to a year ahead', async () => {
      for (const ahead of [120, 365 * 86_400]) {
        expectRefusal(await feedWith(mg(), await mg().token(orgId, { iat: now() + ahead, exp: now() + ahead + 60 }), orgId), 401, /issued in the future/);
        expectRefusal(await feedWith(mg(), await mg().token(orgId, { nbf: now() + ahead, exp: now() + ahead + 60 }), orgId), 401, /not yet valid/);
      }
    });

    it(`refuses a lifetime (exp - iat) beyond AUTH_MAX_TOKEN_LIFETIME_S, with or without iat`, async () => {
      expectRefusal(await feedWith(mg(), await mg().token(orgId, { iat: now(), exp: now() + MAX_LIFETIME_S + 120 }), orgId), 401, /lives longer/);
      expectRefusal(await feedWith(mg(), await mg().token(orgId, { iat: now() - 86_400, exp: now() + 60 }), orgId), 401, /lives longer/);
      expectRefusal(await feedWith(mg(), await mg().token(orgId, { iat: undefined, exp: now() + 10 * 365 * 86_400 }), orgId), 401, /lives longer/);
      const answer = await feedWith(mg(), await mg().token(orgId, { iat: now() - 60, exp: now() + MAX_LIFETIME_S - 120 }), orgId);
      expect(answer.status, answer.text).to.equal(200);
    });

    it('refuses exp and iat that are not numbers', async () => {
      expectRefusal(await feedWith(mg(), await mg().token(orgId, { exp: `${now() + 60}` }), orgId), 401);
      expectRefusal(await feedWith(mg(), await mg().token(orgId, { iat: 'yesterday' }), orgId), 401);
    });
  });

  describe('3.11 explicit typing', () => {
    it('refuses a token without the configured typ, or with another (an ID token\'s JWT)', async () => {
      for (const typ of [undefined, 'JWT', 'id+jwt']) {
        expectRefusal(await feedWith(mg(), await mg().token(orgId, {}, { typ }), orgId), 401, /"typ"/);
      }
      const answer = await feedWith(mg(), await mg().token(orgId, {}, { typ: 'application/at+jwt' }), orgId);
      expect(answer.status, answer.text).to.equal(200);
    });
  });

  describe('3.12 / 3.2 claims read strictly', () => {
    it('refuses a token without sub, or with org_ids that is not a list of strings', async () => {
      expectRefusal(await feedWith(mg(), await mg().token(orgId, { sub: undefined }), orgId), 401, /"sub"/);
      expectRefusal(await feedWith(mg(), await mg().token(orgId, { org_ids: orgId }), orgId), 401, /"org_ids"/);
    });
  });
});
