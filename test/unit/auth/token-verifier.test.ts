import { expect } from 'chai';
import { createPublicKey } from 'node:crypto';
import { SignJWT, exportSPKI, generateKeyPair } from 'jose';
import { algorithmsForPublicKey, createTokenVerifier } from '../../../src/auth/token-verifier.js';
import { appErrorOf } from '../../support/rejections.js';

const ORG = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa';
const claims = { org_ids: [ORG], scope: 'events:read' };

describe('token verifier', () => {
  describe('with a PEM public key', () => {
    it('verifies ES256 and refuses an HS256 token signed with the public key text (key confusion)', async () => {
      const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
      const pem = await exportSPKI(publicKey);
      const verifier = createTokenVerifier({ key: { kind: 'public-key', pem } });
      const good = await new SignJWT(claims).setProtectedHeader({ alg: 'ES256' }).setSubject('u').setExpirationTime('1h').sign(privateKey);
      expect((await verifier.verify(good)).subject).to.equal('u');

      const forged = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setSubject('u').setExpirationTime('1h')
        .sign(new TextEncoder().encode(pem));
      const error = await appErrorOf(verifier.verify(forged));
      expect(error.code).to.equal('UNAUTHENTICATED');
      expect(error.detail).to.match(/algorithm is not allowed/);
    });

    it('maps key types to their algorithms only', async () => {
      const rsa = await generateKeyPair('RS256', { extractable: true });
      const ed = await generateKeyPair('EdDSA', { extractable: true });
      const es384 = await generateKeyPair('ES384', { extractable: true });
      expect(algorithmsForPublicKey(createPublicKey(await exportSPKI(rsa.publicKey)))).to.deep.equal(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512']);
      expect(algorithmsForPublicKey(createPublicKey(await exportSPKI(ed.publicKey)))).to.deep.equal(['EdDSA', 'Ed25519']);
      expect(algorithmsForPublicKey(createPublicKey(await exportSPKI(es384.publicKey)))).to.deep.equal(['ES384']);
    });
  });

  describe('with issuer and audience configured', () => {
    const secret = 'k'.repeat(32);
    const verifier = createTokenVerifier({ key: { kind: 'hs256', secret }, issuer: 'https://idp', audience: 'core-api' });
    const sign = (iss?: string, aud?: string) => {
      let jwt = new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setSubject('u').setExpirationTime('1h');
      if (iss) jwt = jwt.setIssuer(iss);
      if (aud) jwt = jwt.setAudience(aud);
      return jwt.sign(new TextEncoder().encode(secret));
    };

    it('accepts the right iss and aud', async () => {
      expect((await verifier.verify(await sign('https://idp', 'core-api'))).subject).to.equal('u');
    });

    for (const [iss, aud, claim] of [
      ['https://evil', 'core-api', 'iss'],
      [undefined, 'core-api', 'iss'],
      ['https://idp', 'other', 'aud'],
      ['https://idp', undefined, 'aud'],
    ] as const) {
      it(`is a 401 for iss=${String(iss)} aud=${String(aud)}`, async () => {
        const error = await appErrorOf(verifier.verify(await sign(iss, aud)));
        expect(error.code).to.equal('UNAUTHENTICATED');
        expect(error.detail).to.include(`"${claim}"`);
      });
    }
  });

  describe('clock skew', () => {
    const secret = 'c'.repeat(32);
    // A fixed "now" for the verifier; tokens carry explicit times around it, so nothing sleeps.
    const NOW_S = 1_900_000_000;
    const verifier = createTokenVerifier({ key: { kind: 'hs256', secret }, clockToleranceSeconds: 30, now: () => NOW_S * 1000 });
    const sign = (times: { exp: number; nbf?: number }) => {
      let jwt = new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setSubject('u').setIssuedAt(NOW_S - 120).setExpirationTime(times.exp);
      if (times.nbf !== undefined) jwt = jwt.setNotBefore(times.nbf);
      return jwt.sign(new TextEncoder().encode(secret));
    };

    it('accepts a token expired 10 s ago and refuses one expired 60 s ago, with 30 s tolerance', async () => {
      expect((await verifier.verify(await sign({ exp: NOW_S - 10 }))).subject).to.equal('u');
      const error = await appErrorOf(verifier.verify(await sign({ exp: NOW_S - 60 })));
      expect(error.code).to.equal('UNAUTHENTICATED');
      expect(error.detail).to.match(/expired/);
    });

    it('accepts nbf 10 s ahead and refuses nbf 60 s ahead, with 30 s tolerance', async () => {
      expect((await verifier.verify(await sign({ exp: NOW_S + 600, nbf: NOW_S + 10 }))).subject).to.equal('u');
      const error = await appErrorOf(verifier.verify(await sign({ exp: NOW_S + 600, nbf: NOW_S + 60 })));
      expect(error.code).to.equal('UNAUTHENTICATED');
      expect(error.detail).to.match(/not yet valid/);
    });

    it('defaults to 30 s and allows none when set to 0', async () => {
      const lenient = createTokenVerifier({ key: { kind: 'hs256', secret }, now: () => NOW_S * 1000 });
      expect((await lenient.verify(await sign({ exp: NOW_S - 29 }))).subject).to.equal('u');
      const strict = createTokenVerifier({ key: { kind: 'hs256', secret }, clockToleranceSeconds: 0, now: () => NOW_S * 1000 });
      expect((await appErrorOf(strict.verify(await sign({ exp: NOW_S - 1 })))).code).to.equal('UNAUTHENTICATED');
    });
  });
  describe('time claims and type (RFC 8725)', () => {
    const secret = 't'.repeat(32);
    const NOW_S = 1_900_000_000;
    const make = (options: { maxLifetimeSeconds?: number; tokenType?: string } = {}) =>
      createTokenVerifier({ key: { kind: 'hs256', secret }, clockToleranceSeconds: 30, now: () => NOW_S * 1000, cache: false, ...options });
    const sign = (times: { exp?: number; iat?: number }, typ?: string) => {
      let jwt = new SignJWT(claims).setProtectedHeader({ alg: 'HS256', ...(typ === undefined ? {} : { typ }) }).setSubject('u');
      if (times.exp !== undefined) jwt = jwt.setExpirationTime(times.exp);
      if (times.iat !== undefined) jwt = jwt.setIssuedAt(times.iat);
      return jwt.sign(new TextEncoder().encode(secret));
    };

    it('refuses a token without exp', async () => {
      const error = await appErrorOf(make().verify(await sign({ iat: NOW_S })));
      expect(error.code).to.equal('UNAUTHENTICATED');
      expect(error.detail).to.equal('Bearer token has no "exp" claim.');
    });

    it('accepts iat 10 s ahead and refuses iat 60 s or a year ahead, with 30 s tolerance', async () => {
      expect((await make().verify(await sign({ iat: NOW_S + 10, exp: NOW_S + 600 }))).subject).to.equal('u');
      for (const ahead of [60, 365 * 86_400]) {
        const error = await appErrorOf(make().verify(await sign({ iat: NOW_S + ahead, exp: NOW_S + ahead + 600 })));
        expect(error.code).to.equal('UNAUTHENTICATED');
        expect(error.detail).to.equal('Bearer token was issued in the future.');
      }
    });

    it('accepts a lifetime (exp - iat) of exactly the maximum and refuses one second more; without iat the time left counts', async () => {
      const v = make({ maxLifetimeSeconds: 3600 });
      expect((await v.verify(await sign({ iat: NOW_S - 100, exp: NOW_S - 100 + 3600 }))).subject).to.equal('u');
      expect((await appErrorOf(v.verify(await sign({ iat: NOW_S - 100, exp: NOW_S - 100 + 3601 })))).detail).to.match(/lives longer than the 3600 s/);
      expect((await v.verify(await sign({ exp: NOW_S + 3600 }))).subject).to.equal('u');
      expect((await appErrorOf(v.verify(await sign({ exp: NOW_S + 3601 })))).detail).to.match(/lives longer/);
    });

    it('defaults the longest lifetime to a day', async () => {
      expect((await make().verify(await sign({ iat: NOW_S, exp: NOW_S + 86_400 }))).subject).to.equal('u');
      expect((await appErrorOf(make().verify(await sign({ iat: NOW_S, exp: NOW_S + 86_401 })))).code).to.equal('UNAUTHENTICATED');
    });

    it('checks typ only where one is configured, as a media type (case and application/ prefix ignored)', async () => {
      const token = (typ?: string) => sign({ iat: NOW_S, exp: NOW_S + 600 }, typ);
      expect((await make().verify(await token())).subject).to.equal('u');
      expect((await make().verify(await token('JWT'))).subject).to.equal('u');
      const typed = make({ tokenType: 'at+jwt' });
      expect((await typed.verify(await token('at+jwt'))).subject).to.equal('u');
      expect((await typed.verify(await token('application/AT+JWT'))).subject).to.equal('u');
      for (const other of [undefined, 'JWT', 'id+jwt']) {
        const error = await appErrorOf(typed.verify(await token(other)));
        expect(error.code, String(other)).to.equal('UNAUTHENTICATED');
        expect(error.detail).to.equal('Bearer token "typ" claim is not acceptable.');
      }
    });
  });
});
