import { expect } from 'chai';
import type { CanonicalEventPageResponse } from '../../../src/generated/schema-types.js';
import { openStore } from '../../../src/runtime/store-runtime.js';
import { createClickHouseEventStore } from '../../../src/store/clickhouse-event-store.js';
import { storableEvent } from '../../../src/store/event-rows.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { eventSeries } from '../../support/factories.js';
import { storeEnvironment } from '../../support/stores.js';
import { startTestGateway, type Tenant, type TestGateway } from '../../support/test-gateway.js';
import { clickhouseServer } from './gateways.js';

/**
 * A gateway that keeps first pages for a minute (FEED_FIRST_PAGE_MAX_AGE_MS), on the
 * server store: chDB binds one data directory per process, so only the server can have a
 * gateway of this file's own. The cache itself is the same on both (src/feed/first-page-cache.ts).
 */
describe('feed first pages kept in memory [clickhouse-server]', function () {
  this.timeout(120_000);
  let gw: TestGateway;
  let sql: SqlTransport;

  before(async () => {
    gw = await startTestGateway({ ...storeEnvironment('clickhouse-server', (await clickhouseServer()).url), FEED_FIRST_PAGE_MAX_AGE_MS: '60000' });
    sql = await openStore(gw.config);
  });

  after(async () => {
    await sql?.close();
    await gw?.close();
  });

  const firstPage = async (tenant: Tenant, query = '') => {
    const res = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events${query}`, { headers: await tenant.headers() });
    expect(res.status).to.equal(200);
    return res.body.data.items.map((e) => e.id);
  };

  /** Events written to the store behind the gateway's back, as another gateway's ingestion would. */
  const elsewhere = (tenant: Tenant, count: number, start: number) =>
    createClickHouseEventStore(sql).insertEvents(eventSeries(count, { org_id: tenant.orgId, project_id: tenant.projectId }, start).map(storableEvent));

  it("serves the kept first page while other processes write, and drops it when this process's own ingestion writes the project", async () => {
    const tenant = gw.tenant();
    await gw.seed(eventSeries(3, { org_id: tenant.orgId, project_id: tenant.projectId }));
    const kept = await firstPage(tenant);
    expect(kept).to.have.length(3);
    await elsewhere(tenant, 2, Date.parse('2026-02-01T00:00:00Z'));
    expect(await firstPage(tenant), 'the kept page, within its age').to.deep.equal(kept);
    expect(await firstPage(tenant, '?limit=10'), 'another page size is another page, read now').to.have.length(5);
    await gw.seed(eventSeries(1, { org_id: tenant.orgId, project_id: tenant.projectId }, Date.parse('2026-03-01T00:00:00Z')));
    expect(await firstPage(tenant), 'read again after its own write: every event').to.have.length(6);
  });

  it('keeps the pages of one project id in two organizations apart', async () => {
    const a = gw.tenant();
    const other = gw.tenant();
    // Organization B, with the same project id as A's.
    const b: Tenant = { orgId: other.orgId, projectId: a.projectId, headers: (options) => other.headers(options) };
    await gw.seed(eventSeries(2, { org_id: a.orgId, project_id: a.projectId }));
    const pageA = await firstPage(a);
    expect(pageA).to.have.length(2);
    expect(await firstPage(b), "B's own page, not A's kept one").to.deep.equal([]);
    await gw.seed(eventSeries(1, { org_id: b.orgId, project_id: b.projectId }, Date.parse('2026-04-01T00:00:00Z')));
    const pageB = await firstPage(b);
    expect(pageB, "B's write dropped B's page only").to.have.length(1);
    expect(pageA).to.not.include(pageB[0]);
    expect(await firstPage(a), "A's kept page").to.deep.equal(pageA);
  });
});
