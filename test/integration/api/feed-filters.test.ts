import { expect } from 'chai';
import type { CanonicalEvent, CanonicalEventPageResponse, ErrorEnvelope } from '../../../src/generated/schema-types.js';
import { canonicalEvent, uuid } from '../../support/factories.js';
import type { TestGateway, Tenant } from '../../support/test-gateway.js';
import { describeOnEachStore } from './gateways.js';

describeOnEachStore('event feed filters and tenant scope', (gateway) => {
  let gw: TestGateway;
  let tenant: Tenant;
  let headers: Record<string, string>;
  const deviceId = uuid();
  const fleetId = uuid();
  let events: CanonicalEvent[];

  before(async () => {
    gw = await gateway();
    tenant = gw.tenant();
    headers = await tenant.headers();
    const base = { org_id: tenant.orgId, project_id: tenant.projectId };
    events = [
      canonicalEvent({ ...base, domain: 'devices', entity: 'enrollment', action: 'queued', device_id: deviceId, fleet_id: fleetId }),
      canonicalEvent({ ...base, domain: 'devices', entity: 'status', action: 'online', device_id: deviceId }),
      canonicalEvent({ ...base, domain: 'edge', entity: 'policy', action: 'update_queued', device_id: null, fleet_id: fleetId }),
      canonicalEvent({ ...base, domain: 'ota', entity: 'job', action: 'queued' }),
    ];
    await gw.seed(events);
  });

  async function ids(query: string): Promise<string[]> {
    const res = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events${query}`, { headers });
    expect(res.status, res.text).to.equal(200);
    return res.body.data.items.map((e) => e.id).sort();
  }
  const idsOf = (...indexes: number[]) => indexes.map((i) => events[i]!.id).sort();

  it('filters by domain', async () => expect(await ids('?domain=devices')).to.deep.equal(idsOf(0, 1)));
  it('filters by entity', async () => expect(await ids('?entity=policy')).to.deep.equal(idsOf(2)));
  it('filters by action', async () => expect(await ids('?action=queued')).to.deep.equal(idsOf(0, 3)));
  it('filters by device_id', async () => expect(await ids(`?device_id=${deviceId}`)).to.deep.equal(idsOf(0, 1)));
  it('filters by fleet_id', async () => expect(await ids(`?fleet_id=${fleetId}`)).to.deep.equal(idsOf(0, 2)));
  it('combines filters with AND', async () =>
    expect(await ids(`?domain=devices&fleet_id=${fleetId}`)).to.deep.equal(idsOf(0)));
  it('matches nothing for an unknown value', async () => expect(await ids('?domain=nope')).to.deep.equal([]));

  it('returns every field of an event as it was ingested', async () => {
    const res = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events?entity=job`, { headers });
    const item = res.body.data.items[0]!;
    const sent = events[3]!;
    expect(item).to.deep.equal({ ...sent, occurred_at: sent.occurred_at.replace(/\.(\d{3})Z$/, '.$1000Z') });
  });

  for (const [name, value] of [['device_id', 'not-a-uuid'], ['fleet_id', '123']] as const) {
    it(`rejects a ${name} that is not a uuid with 400`, async () => {
      const res = await gw.call<ErrorEnvelope>('GET', `/projects/${tenant.projectId}/events?${name}=${value}`, { headers });
      expect(res.status).to.equal(400);
      expect(res.body.message).to.have.property(`query.${name}`);
    });
  }

  it('rejects a project_id that is not a uuid with 400', async () => {
    const res = await gw.call<ErrorEnvelope>('GET', '/projects/not-a-uuid/events', { headers });
    expect(res.status).to.equal(400);
    expect(res.body).to.deep.include({ ok: 0, message: { 'path.project_id': 'must match format "uuid"' } });
  });

  it('rejects unknown and repeated query parameters with 400, listing each', async () => {
    const res = await gw.call<ErrorEnvelope>('GET', `/projects/${tenant.projectId}/events?devce_id=x&domain=a&domain=b`, { headers });
    expect(res.status).to.equal(400);
    expect(res.body.message).to.have.keys('query.devce_id', 'query.domain');
  });

  it("never shows one organization's events under another, even for the same project id", async () => {
    const intruder = gw.tenant();
    const res = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events`, {
      headers: await intruder.headers(),
    });
    expect(res.status).to.equal(200);
    expect(res.body.data.items).to.deep.equal([]);
  });

  it('shows a project only its own events', async () => {
    const sibling = canonicalEvent({ org_id: tenant.orgId, project_id: uuid() });
    await gw.seed([sibling]);
    expect(await ids('?limit=200')).to.not.include(sibling.id);
  });
});
