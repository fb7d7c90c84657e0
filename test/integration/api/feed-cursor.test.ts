import { expect } from 'chai';
import type { CanonicalEventPageResponse, ErrorEnvelope } from '../../../src/generated/schema-types.js';
import { eventSeries, uuid } from '../../support/factories.js';
import type { TestGateway, Tenant } from '../../support/test-gateway.js';
import { describeOnEachStore } from './gateways.js';

describeOnEachStore('event feed cursor', (gateway) => {
  let gw: TestGateway;
  let tenant: Tenant;
  let headers: Record<string, string>;
  let cursor: string;

  before(async () => {
    gw = await gateway();
    tenant = gw.tenant();
    headers = await tenant.headers();
    await gw.seed(eventSeries(5, { org_id: tenant.orgId, project_id: tenant.projectId, domain: 'devices' }));
    const first = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events?limit=2&domain=devices`, { headers });
    cursor = first.body.meta.next_cursor!;
  });

  const follow = (path: string, c: string, h = headers) =>
    gw.call<ErrorEnvelope>('GET', `${path}${path.includes('?') ? '&' : '?'}cursor=${encodeURIComponent(c)}`, { headers: h });

  it('is accepted by the query that issued it', async () => {
    const res = await follow(`/projects/${tenant.projectId}/events?limit=2&domain=devices`, cursor);
    expect(res.status).to.equal(200);
  });

  it('may be followed with another page size', async () => {
    const res = await follow(`/projects/${tenant.projectId}/events?limit=50&domain=devices`, cursor);
    expect(res.status).to.equal(200);
  });

  function expectCursorRejected(res: { status: number; body: ErrorEnvelope }) {
    expect(res.status).to.equal(400);
    expect(res.body.ok).to.equal(0);
    expect(res.body.message).to.have.property('query.cursor');
  }

  it('is a 400 when any character was altered', async () => {
    for (const i of [3, Math.floor(cursor.length / 2), cursor.length - 2]) {
      const c = cursor[i] === 'A' ? 'B' : 'A';
      expectCursorRejected(await follow(`/projects/${tenant.projectId}/events?domain=devices`, cursor.slice(0, i) + c + cursor.slice(i + 1)));
    }
  });

  it('is a 400 with other filters', async () => {
    expectCursorRejected(await follow(`/projects/${tenant.projectId}/events?domain=edge`, cursor));
    expectCursorRejected(await follow(`/projects/${tenant.projectId}/events`, cursor));
    expectCursorRejected(await follow(`/projects/${tenant.projectId}/events?domain=devices&action=queued`, cursor));
  });

  it('is a 400 for another project', async () => {
    expectCursorRejected(await follow(`/projects/${uuid()}/events?domain=devices`, cursor));
  });

  it('is a 400 under another organization', async () => {
    const other = gw.tenant();
    expectCursorRejected(await follow(`/projects/${tenant.projectId}/events?domain=devices`, cursor, await other.headers()));
  });

  it('is a 400 when it is not a cursor at all', async () => {
    for (const junk of ['x', 'v1..', 'v1.abc.def', 'v2.' + cursor.slice(3), 'a'.repeat(2000)]) {
      expectCursorRejected(await follow(`/projects/${tenant.projectId}/events?domain=devices`, junk));
    }
  });

  it('survives a restart of the gateway', async () => {
    await gw.restart();
    const res = await follow(`/projects/${tenant.projectId}/events?limit=2&domain=devices`, cursor);
    expect(res.status).to.equal(200);
  });
});
