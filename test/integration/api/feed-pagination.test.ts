import { expect } from 'chai';
import type { CanonicalEventPageResponse, ErrorEnvelope } from '../../../src/generated/schema-types.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import { createCoreApiClient } from '../../../client/index.js';
import { canonicalEvent, eventSeries, hs256Token } from '../../support/factories.js';
import type { TestGateway, Tenant } from '../../support/test-gateway.js';
import { describeOnEachStore } from './gateways.js';

const schemas = createSchemaRegistry();

describeOnEachStore('event feed pagination', (gateway) => {
  let gw: TestGateway;
  let tenant: Tenant;
  let headers: Record<string, string>;

  before(async () => {
    gw = await gateway();
    tenant = gw.tenant();
    headers = await tenant.headers();
    await gw.seed(eventSeries(230, { org_id: tenant.orgId, project_id: tenant.projectId }));
  });

  const page = (query: string) =>
    gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events${query}`, { headers });

  it('answers with a schema-valid page envelope', async () => {
    const res = await page('?limit=3');
    expect(res.status).to.equal(200);
    const checked = schemas.check('canonical-event-page.schema.json', res.body);
    expect(checked.ok, JSON.stringify(checked)).to.equal(true);
    expect(res.body.ok).to.equal(1);
  });

  for (const [query, expected] of [
    ['', 50],
    ['?limit=0', 1],
    ['?limit=-5', 1],
    ['?limit=1', 1],
    ['?limit=200', 200],
    ['?limit=201', 200],
    ['?limit=100000', 200],
  ] as const) {
    it(`clamps limit "${query || '(absent)'}" to ${expected} and reports it`, async () => {
      const res = await page(query);
      expect(res.status).to.equal(200);
      expect(res.body.meta.items_per_page).to.equal(expected);
      expect(res.body.meta.count).to.equal(expected);
      expect(res.body.data.items).to.have.length(expected);
      expect(res.body.meta.has_more).to.equal(true);
      expect(res.body.meta.next_cursor).to.be.a('string');
    });
  }

  for (const bad of ['abc', '1.5', '', '10abc']) {
    it(`rejects the non-integer limit "${bad}" with 400`, async () => {
      const res = await gw.call<ErrorEnvelope>('GET', `/projects/${tenant.projectId}/events?limit=${bad}`, { headers });
      expect(res.status).to.equal(400);
      expect(res.body.ok).to.equal(0);
      expect(res.body.message).to.have.property('query.limit');
    });
  }

  it('orders newest first, by occurred_at then id', async () => {
    const res = await page('?limit=200');
    const times = res.body.data.items.map((e) => e.occurred_at);
    expect(times).to.deep.equal([...times].sort().reverse());
  });

  it('ends with has_more false and a null next_cursor', async () => {
    const first = await page('?limit=200');
    const last = await page(`?limit=200&cursor=${encodeURIComponent(first.body.meta.next_cursor!)}`);
    expect(last.body.meta).to.deep.equal({ items_per_page: 200, count: 30, has_more: false, next_cursor: null });
  });

  it('gives has_more false on an exactly full last page', async () => {
    const t = gw.tenant();
    await gw.seed(eventSeries(4, { org_id: t.orgId, project_id: t.projectId }));
    const res = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${t.projectId}/events?limit=4`, { headers: await t.headers() });
    expect(res.body.meta).to.deep.equal({ items_per_page: 4, count: 4, has_more: false, next_cursor: null });
  });

  it('answers an empty project with an empty page', async () => {
    const res = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${gw.tenant().projectId}/events`, { headers });
    expect(res.status).to.equal(200);
    expect(res.body.data.items).to.deep.equal([]);
    expect(res.body.meta).to.deep.equal({ items_per_page: 50, count: 0, has_more: false, next_cursor: null });
  });

  it('traverses every event exactly once, with ties on occurred_at, while new events arrive', async () => {
    const t = gw.tenant();
    const sameInstant = '2026-02-01T10:00:00.000001Z';
    const original = [
      ...eventSeries(57, { org_id: t.orgId, project_id: t.projectId }),
      // 25 events share one timestamp, so pages must break ties on id.
      ...Array.from({ length: 25 }, () => canonicalEvent({ org_id: t.orgId, project_id: t.projectId, occurred_at: sameInstant })),
    ];
    await gw.seed(original);
    // Through the typed client, so the client's paging is held to the same rules. It throws on any non-2xx.
    const client = createCoreApiClient({ baseUrl: gw.runtime.url, token: () => hs256Token(gw.secret, { orgIds: [t.orgId] }), orgId: t.orgId });
    const seen: string[] = [];
    let pages = 0;
    for await (const current of client.events.listPages(t.projectId, { limit: 7 })) {
      expect(current.meta.count).to.equal(current.items.length);
      seen.push(...current.items.map((e) => e.id));
      expect(current.meta.has_more).to.equal(current.meta.next_cursor !== null);
      // Newer events land in front of the traversal and must not disturb it.
      await gw.seed([canonicalEvent({ org_id: t.orgId, project_id: t.projectId, occurred_at: new Date(Date.now() + pages * 1000).toISOString() })]);
      pages += 1;
      if (pages >= 50) break;
    }
    const originalIds = new Set(original.map((e) => e.id));
    const seenOriginal = seen.filter((id) => originalIds.has(id));
    expect(new Set(seen).size, 'no repeats').to.equal(seen.length);
    expect(seenOriginal).to.have.length(original.length);
    expect(new Set(seenOriginal)).to.deep.equal(originalIds);
  });
});
