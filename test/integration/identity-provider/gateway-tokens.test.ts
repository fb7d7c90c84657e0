import { expect } from 'chai';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { uuid } from '../../support/factories.js';
import {
  newProviderKey,
  providerClient,
  startIdentityProvider,
  type IdentityProvider,
} from '../../support/identity-provider.js';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';

const AUDIENCE = 'urn:core-gateway';

interface Outcome {
  /** Which caller sent it. */
  readonly caller: number;
  readonly sentAt: number;
  readonly kid: string;
  readonly status: number;
  readonly detail: string;
}

/**
 * The gateway with AUTH_OIDC_ISSUER pointing at a real OpenID provider
 * (test/support/identity-provider-process.ts): every token here was issued by the
 * provider's token endpoint, and the gateway found the provider's keys by discovery.
 */
describe('tokens from an OpenID Connect provider', function () {
  this.timeout(60_000);
  const orgId = uuid();
  const otherOrgId = uuid();
  const projectId = uuid();
  const caller = providerClient({ audience: AUDIENCE, orgIds: [orgId] });
  const readOnly = providerClient({ audience: AUDIENCE, orgIds: [orgId], scope: 'events:read' });
  const otherService = providerClient({ audience: 'urn:another-service', orgIds: [orgId] });
  const shortLived = providerClient({ audience: AUDIENCE, orgIds: [orgId], tokenTtlS: 1 });
  let idp: IdentityProvider;
  let gateway: TestGateway | undefined;

  before(async () => {
    idp = await startIdentityProvider([caller, readOnly, otherService, shortLived]);
  });
  afterEach(async () => {
    await gateway?.close();
    gateway = undefined;
  });
  after(async () => {
    await idp?.stop();
  });

  /** An in-process gateway that trusts the provider by its issuer alone. */
  async function startGateway(env: Record<string, string> = {}): Promise<TestGateway> {
    // AUTH_JWT_SECRET empty is unset: startTestGateway's own secret gives way to the provider.
    gateway = await startTestGateway({ AUTH_JWT_SECRET: '', AUTH_OIDC_ISSUER: idp.issuer, AUTH_AUDIENCE: AUDIENCE, ...env });
    return gateway;
  }

  const headers = (token: string, org = orgId) => ({ authorization: `Bearer ${token}`, 'org-id': org });
  const feed = (gw: TestGateway, token: string, org = orgId) => gw.call<{ detail?: string }>('GET', `/projects/${projectId}/events`, { headers: headers(token, org) });

  it('accepts its tokens, with the organizations and permissions their claims grant', async () => {
    const gw = await startGateway();
    const { access_token: token } = await idp.token(caller, 'events:read devices:enroll');
    const claims = decodeJwt(token);
    expect(claims).to.deep.include({ iss: idp.issuer, aud: AUDIENCE, sub: caller.clientId, scope: 'events:read devices:enroll', org_ids: [orgId] });
    expect(decodeProtectedHeader(token)).to.deep.include({ alg: 'RS256', kid: idp.signingKid() });

    expect((await feed(gw, token)).status).to.equal(200);
    const enrolled = await gw.call('POST', `/projects/${projectId}/fleets/${uuid()}/devices/${uuid()}/enroll`, {
      headers: headers(token),
      body: { display_name: 'Pump 7' },
    });
    expect(enrolled.status, enrolled.text).to.equal(202);
    const elsewhere = await feed(gw, token, otherOrgId);
    expect(elsewhere.status).to.equal(403);
    expect(elsewhere.body.detail).to.match(/does not grant access to this organization/);

    // A token is worth the scopes it was issued for, not those the client may ask for.
    const narrow = (await idp.token(caller, 'events:read')).access_token;
    const refused = await gw.call<{ detail?: string }>('PATCH', `/projects/${projectId}/fleets/${uuid()}/edge/policy`, {
      headers: headers(narrow),
      body: { sync: { every_s: 60 } },
    });
    expect(refused.status).to.equal(403);
    expect(refused.body.detail).to.match(/lacks the "edge-policy:write" permission/);
    // And a client gets only what the provider registered it for.
    const reader = (await idp.token(readOnly, 'events:read')).access_token;
    expect((await feed(gw, reader)).status).to.equal(200);
    const asked = await idp.token(readOnly, 'events:read devices:enroll').then(
      () => 'issued',
      (error: unknown) => (error as Error).message,
    );
    expect(asked).to.match(/answered 400: .*invalid_scope/);
  });

  it('refuses a token the provider issued for another audience', async () => {
    const gw = await startGateway();
    const { access_token: token } = await idp.token(otherService, 'events:read');
    expect(decodeJwt(token).aud).to.equal('urn:another-service');
    const res = await feed(gw, token);
    expect(res.status).to.equal(401);
    expect(res.body.detail).to.equal('Bearer token "aud" claim is not acceptable.');
  });

  it('refuses a token of the provider once it has expired', async () => {
    const gw = await startGateway({ AUTH_CLOCK_TOLERANCE_S: '0' });
    const { access_token: token, expires_in: expiresIn } = await idp.token(shortLived, 'events:read');
    expect(expiresIn).to.equal(1);
    const exp = decodeJwt(token).exp!;
    // Valid when issued: the refusal below is the clock's doing, not the token's.
    const fresh = await feed(gw, token);
    if (Date.now() < exp * 1000) expect(fresh.status, fresh.text).to.equal(200);
    await waitFor('the token to expire', async () => (Date.now() >= (exp + 1) * 1000 ? true : undefined), 10_000, 50);
    // jose refuses from exp on; a verified token is remembered only until exp plus the tolerance.
    const res = await feed(gw, token);
    expect(res.status).to.equal(401);
    expect(res.body.detail).to.equal('Bearer token has expired.');
  });

  /**
   * Callers that each take a fresh token from the provider and use it at once, until
   * stopped: what a fleet of services does while the provider rotates its keys.
   */
  function callersUnderRotation(gw: TestGateway, count: number) {
    const outcomes: Outcome[] = [];
    let stopping = false;
    const loops = Array.from({ length: count }, async (_, index) => {
      while (!stopping) {
        const { access_token: token } = await idp.token(caller, 'events:read');
        const sentAt = Date.now();
        const res = await feed(gw, token);
        outcomes.push({ caller: index, sentAt, kid: decodeProtectedHeader(token).kid!, status: res.status, detail: res.body.detail ?? '' });
      }
    });
    return {
      outcomes,
      /** Waits until every caller has been answered 200 for a token signed with `kid` after `since`, so none holds an older one. */
      succeededWith: (kid: string, since: number) =>
        waitFor(
          `a 200 for a token signed with ${kid} on every caller`,
          async () => {
            const done = new Set(outcomes.filter((o) => o.kid === kid && o.status === 200 && o.sentAt >= since).map((o) => o.caller));
            return done.size === count ? true : undefined;
          },
          30_000,
          20,
        ),
      async stop() {
        stopping = true;
        await Promise.all(loops);
      },
    };
  }

  it('fails no request through a rotation whose new key is published before it signs', async () => {
    // A short max age stands in for the default 10 min: the gateway refreshes its keys in the background.
    const gw = await startGateway({ AUTH_JWKS_MAX_AGE_MS: '1000', AUTH_JWKS_COOLDOWN_MS: '1000' });
    const [oldKey] = idp.keys();
    const callers = callersUnderRotation(gw, 4);
    try {
      await callers.succeededWith(oldKey!.kid, 0);
      // 1. The provider publishes the next key beside the current one, which still signs.
      const newKey = await newProviderKey();
      await idp.setKeys([oldKey!, newKey], oldKey!.kid);
      const published = Date.now();
      // The gateway learns of it by its own refresh, not because a token named it.
      await waitFor('the gateway to fetch the key set again', async () => ((await idp.jwksFetches()).some((f) => f.at > published) ? true : undefined), 10_000, 50);
      // 2. The new key signs; tokens of the old one still verify while they live.
      await idp.setKeys([oldKey!, newKey], newKey.kid);
      const switched = Date.now();
      await callers.succeededWith(newKey.kid, switched);
      // 3. The old key is retired once no caller holds a token of it.
      await idp.setKeys([newKey], newKey.kid);
      const retired = Date.now();
      await waitFor('the gateway to fetch the key set after the retirement', async () => ((await idp.jwksFetches()).some((f) => f.at > retired) ? true : undefined), 10_000, 50);
      await callers.succeededWith(newKey.kid, Date.now());
    } finally {
      await callers.stop();
    }
    const failed = callers.outcomes.filter((o) => o.status !== 200);
    expect(failed, JSON.stringify(failed.slice(0, 5))).to.deep.equal([]);
    expect(callers.outcomes.length).to.be.at.least(8);
  });

  it('fails requests only inside the cooldown when the new key signs as soon as it is published', async () => {
    const cooldownMs = 3000;
    const gw = await startGateway({ AUTH_JWKS_COOLDOWN_MS: String(cooldownMs) });
    const [oldKey] = idp.keys();
    const callers = callersUnderRotation(gw, 4);
    let lastFetchBeforeSwitch: number;
    let newKid: string;
    try {
      await callers.succeededWith(oldKey!.kid, 0);
      // The provider adds a key and signs with it at once, old key still published: no warning.
      const newKey = await newProviderKey();
      newKid = newKey.kid;
      const fetches = await idp.jwksFetches();
      lastFetchBeforeSwitch = Math.max(...fetches.map((f) => f.at));
      await idp.setKeys([oldKey!, newKey], newKey.kid);
      await callers.succeededWith(newKey.kid, 0);
      await idp.setKeys([newKey], newKey.kid);
      await callers.succeededWith(newKey.kid, Date.now());
    } finally {
      await callers.stop();
    }
    const failed = callers.outcomes.filter((o) => o.status !== 200);
    // Documented (docs/decisions/jwks-keys.md): a kid the gateway has not seen waits at most one
    // cooldown from its last fetch, answered 401 "unknown key" meanwhile; nothing else fails.
    for (const outcome of failed) {
      expect(outcome, JSON.stringify(outcome)).to.deep.include({ status: 401, kid: newKid, detail: 'Bearer token was signed by an unknown key.' });
      expect(outcome.sentAt).to.be.below(lastFetchBeforeSwitch + cooldownMs);
    }
    const succeededAfter = callers.outcomes.filter((o) => o.kid === newKid && o.status === 200);
    expect(succeededAfter.length).to.be.at.least(1);
    console.log(`      rotation without notice: ${failed.length} of ${callers.outcomes.length} requests refused as "unknown key", all within the ${cooldownMs} ms cooldown`);
  });
});
