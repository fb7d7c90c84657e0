import { expect } from 'chai';
import { SignJWT, UnsecuredJWT, generateKeyPair } from 'jose';
import type { ErrorEnvelope } from '../../../src/generated/schema-types.js';
import { ALL_SCOPES, uuid } from '../../support/factories.js';
import type { TestGateway, Tenant } from '../../support/test-gateway.js';
import { describeOnEachStore } from './gateways.js';

/**
 * Every 401 and 403 cause of decisions.md, on each operation. The token claims are built
 * here by hand where a cause needs a token our own signer would never make.
 */
describeOnEachStore('authentication and permission', (gateway) => {
  let gw: TestGateway;
  let tenant: Tenant;

  before(async () => {
    gw = await gateway();
    tenant = gw.tenant();
  });

  const key = () => new TextEncoder().encode(gw.secret);
  const feedPath = () => `/projects/${tenant.projectId}/events`;

  async function expectStatus(status: 401 | 403, headers: Record<string, string>, detail: RegExp, path = feedPath()) {
    const res = await gw.call<ErrorEnvelope>('GET', path, { headers });
    expect(res.status, res.text).to.equal(status);
    expect(res.body.ok).to.equal(0);
    expect(res.body.message).to.equal(status === 401 ? 'Unauthorized' : 'Forbidden');
    expect(res.body.detail).to.match(detail);
    if (status === 401) expect(res.headers.get('www-authenticate')).to.match(/^Bearer/);
  }

  const withToken = (token: string, orgId = tenant.orgId) => ({ authorization: `Bearer ${token}`, 'org-id': orgId });
  const claims = () => ({ org_ids: [tenant.orgId], scope: ALL_SCOPES.join(' ') });

  it('accepts a valid token and ORG-ID', async () => {
    const res = await gw.call('GET', feedPath(), { headers: await tenant.headers() });
    expect(res.status).to.equal(200);
  });

  describe('401', () => {
    it('without an Authorization header', () => expectStatus(401, { 'org-id': tenant.orgId }, /Authorization header is required/));
    it('with another scheme', () => expectStatus(401, { authorization: 'Basic dTpw', 'org-id': tenant.orgId }, /must be "Bearer <token>"/));
    it('with a token that is not a JWT', () => expectStatus(401, withToken('not.a.jwt'), /malformed|invalid/));
    it('with an empty bearer', () => expectStatus(401, { authorization: 'Bearer ', 'org-id': tenant.orgId }, /Bearer <token>/));

    it('with a bad signature', async () => {
      const token = await new SignJWT(claims()).setProtectedHeader({ alg: 'HS256' }).setSubject('u').setExpirationTime('1h')
        .sign(new TextEncoder().encode('another-secret-another-secret-123456'));
      await expectStatus(401, withToken(token), /signature is invalid/);
    });

    it('with alg none', async () => {
      const token = new UnsecuredJWT(claims()).setSubject('u').setExpirationTime('1h').encode();
      await expectStatus(401, withToken(token), /not allowed|invalid/);
    });

    it('with an algorithm outside the allow-list (HS512 with the right secret)', async () => {
      const token = await new SignJWT(claims()).setProtectedHeader({ alg: 'HS512' }).setSubject('u').setExpirationTime('1h')
        .sign(new TextEncoder().encode(gw.secret.repeat(2)));
      await expectStatus(401, withToken(token), /algorithm is not allowed/);
    });

    it('with an RS256 token when the gateway verifies HS256', async () => {
      const { privateKey } = await generateKeyPair('RS256');
      const token = await new SignJWT(claims()).setProtectedHeader({ alg: 'RS256' }).setSubject('u').setExpirationTime('1h').sign(privateKey);
      await expectStatus(401, withToken(token), /algorithm is not allowed/);
    });

    it('when expired', async () => {
      const token = await new SignJWT(claims()).setProtectedHeader({ alg: 'HS256' }).setSubject('u')
        .setExpirationTime(Math.floor(Date.now() / 1000) - 60).sign(key());
      await expectStatus(401, withToken(token), /expired/);
    });

    it('when not yet valid', async () => {
      const token = await new SignJWT(claims()).setProtectedHeader({ alg: 'HS256' }).setSubject('u')
        .setNotBefore(Math.floor(Date.now() / 1000) + 600).setExpirationTime('1h').sign(key());
      await expectStatus(401, withToken(token), /not yet valid/);
    });

    it('without a sub claim', async () => {
      const token = await new SignJWT(claims()).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('1h').sign(key());
      await expectStatus(401, withToken(token), /sub/);
    });

    it('with a malformed org_ids claim', async () => {
      const token = await new SignJWT({ org_ids: tenant.orgId, scope: 'events:read' }).setProtectedHeader({ alg: 'HS256' })
        .setSubject('u').setExpirationTime('1h').sign(key());
      await expectStatus(401, withToken(token), /org_ids/);
    });

    it('without an ORG-ID header', async () => {
      const { authorization } = await tenant.headers();
      await expectStatus(401, { authorization: authorization! }, /ORG-ID header is required/);
    });

    it('with an ORG-ID that is not a uuid', async () => {
      await expectStatus(401, await tenant.headers({ orgHeader: 'acme' }), /ORG-ID header must be/);
    });
  });

  describe('403', () => {
    it('when ORG-ID is not among the token organizations', async () => {
      await expectStatus(403, await tenant.headers({ orgHeader: uuid() }), /organization/);
    });

    it('when the token has no organizations at all', async () => {
      const token = await new SignJWT({ scope: 'events:read' }).setProtectedHeader({ alg: 'HS256' }).setSubject('u').setExpirationTime('1h').sign(key());
      await expectStatus(403, withToken(token), /organization/);
    });

    it('when the permission is missing', async () => {
      await expectStatus(403, await tenant.headers({ scopes: ['devices:enroll'] }), /events:read/);
    });

    it('for enroll without devices:enroll', async () => {
      const res = await gw.call<ErrorEnvelope>('POST', `/projects/${tenant.projectId}/fleets/${uuid()}/devices/${uuid()}/enroll`, {
        headers: await tenant.headers({ scopes: ['events:read', 'edge-policy:write'] }),
        body: {},
      });
      expect(res.status).to.equal(403);
      expect(res.body.detail).to.match(/devices:enroll/);
    });

    it('for edge policy without edge-policy:write', async () => {
      const res = await gw.call<ErrorEnvelope>('PATCH', `/projects/${tenant.projectId}/fleets/${uuid()}/edge/policy`, {
        headers: await tenant.headers({ scopes: ['events:read', 'devices:enroll'] }),
        body: { a: 1 },
      });
      expect(res.status).to.equal(403);
      expect(res.body.detail).to.match(/edge-policy:write/);
    });
  });

  it('accepts the single org_id claim and the scp array claim', async () => {
    const token = await new SignJWT({ org_id: tenant.orgId, scp: ['events:read'] }).setProtectedHeader({ alg: 'HS256' })
      .setSubject('u').setExpirationTime('1h').sign(key());
    const res = await gw.call('GET', feedPath(), { headers: withToken(token) });
    expect(res.status).to.equal(200);
  });

  it('checks credentials before it validates the request', async () => {
    const res = await gw.call<ErrorEnvelope>('GET', '/projects/not-a-uuid/events?limit=x', { headers: {} });
    expect(res.status).to.equal(401);
  });
});
