import { expect } from 'chai';
import { loadConfig } from '../../../src/config/config.js';
import { configRefusal } from '../../support/config-refusal.js';

const SECRET = 'q'.repeat(32);

describe('loadConfig: security settings', () => {
  describe('a production start', () => {
    for (const value of ['production', 'Production', ' PROD ']) {
      it(`is refused on the development secret with NODE_ENV=${value.trim()}, naming every auth variable`, () => {
        const error = configRefusal({ NODE_ENV: value });
        expect(error.message).to.match(/^NODE_ENV: /);
        for (const name of ['AUTH_JWT_SECRET', 'AUTH_JWT_SECRET_FILE', 'AUTH_JWKS_URL', 'AUTH_OIDC_ISSUER', 'AUTH_PUBLIC_KEY']) expect(error.message).to.include(name);
      });
    }

    it('starts with any auth configuration, and development starts without one', () => {
      expect(loadConfig({ NODE_ENV: 'production', AUTH_JWT_SECRET: SECRET }).production).to.equal(true);
      expect(loadConfig({ NODE_ENV: 'production', AUTH_JWKS_URL: 'https://idp.example/jwks' }).auth.kind).to.equal('jwks');
      for (const env of [{}, { NODE_ENV: 'development' }, { NODE_ENV: 'test' }]) {
        const config = loadConfig(env);
        expect(config.auth.kind).to.equal('development');
        expect(config.production).to.equal(false);
      }
    });
  });

  describe('token rules', () => {
    it('defaults to a day of lifetime and no typ', () => {
      expect(loadConfig({}).tokens).to.deep.equal({ maxLifetimeSeconds: 86_400, type: undefined });
    });

    it('reads AUTH_MAX_TOKEN_LIFETIME_S and AUTH_TOKEN_TYPE', () => {
      expect(loadConfig({ AUTH_MAX_TOKEN_LIFETIME_S: '3600', AUTH_TOKEN_TYPE: 'at+jwt' }).tokens).to.deep.equal({ maxLifetimeSeconds: 3600, type: 'at+jwt' });
    });

    for (const [env, name] of [
      [{ AUTH_MAX_TOKEN_LIFETIME_S: '59' }, 'AUTH_MAX_TOKEN_LIFETIME_S'],
      [{ AUTH_MAX_TOKEN_LIFETIME_S: '1d' }, 'AUTH_MAX_TOKEN_LIFETIME_S'],
      [{ AUTH_TOKEN_TYPE: 'at jwt' }, 'AUTH_TOKEN_TYPE'],
      [{ AUTH_TOKEN_TYPE: 'a/b/c' }, 'AUTH_TOKEN_TYPE'],
    ] as const) {
      it(`refuses ${JSON.stringify(env)}`, () => expect(configRefusal(env).message).to.match(new RegExp(`^${name}: `)));
    }
  });

  describe('failed authentications and proxies', () => {
    it('limits failures by default, 30 at once then 60 a minute, and trusts no proxy', () => {
      const config = loadConfig({});
      expect(config.authFailures).to.deep.equal({ perMinute: 60, burst: 30 });
      expect(config.trustedProxies).to.deep.equal([]);
    });

    it('turns the limit off with 0, and reads proxies as addresses or CIDR blocks', () => {
      expect(loadConfig({ AUTH_FAILURES_PER_MINUTE: '0' }).authFailures).to.equal(undefined);
      expect(loadConfig({ AUTH_FAILURES_PER_MINUTE: '10', AUTH_FAILURES_BURST: '5' }).authFailures).to.deep.equal({ perMinute: 10, burst: 5 });
      expect(loadConfig({ TRUSTED_PROXIES: '10.0.0.0/8, 192.168.1.7,fd00::/8' }).trustedProxies).to.deep.equal(['10.0.0.0/8', '192.168.1.7', 'fd00::/8']);
    });

    for (const [env, name] of [
      [{ AUTH_FAILURES_PER_MINUTE: '0', AUTH_FAILURES_BURST: '5' }, 'AUTH_FAILURES_BURST'],
      [{ AUTH_FAILURES_BURST: '0' }, 'AUTH_FAILURES_BURST'],
      [{ TRUSTED_PROXIES: 'proxy.internal' }, 'TRUSTED_PROXIES'],
      [{ TRUSTED_PROXIES: '10.0.0.0/33' }, 'TRUSTED_PROXIES'],
      [{ TRUSTED_PROXIES: '10.0.0.1,' }, 'TRUSTED_PROXIES'],
    ] as const) {
      it(`refuses ${JSON.stringify(env)}`, () => expect(configRefusal(env).message).to.match(new RegExp(`^${name}: `)));
    }
  });
});
