import { expect } from 'chai';
import type { CanonicalEventPageResponse, EnrollmentAccepted } from '../../../src/generated/schema-types.js';
import { feedSql } from '../../../src/store/feed-sql.js';
import { openStore } from '../../../src/runtime/store-runtime.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { canonicalEvent, eventSeries, uuid } from '../../support/factories.js';
import type { TestGateway, Tenant } from '../../support/test-gateway.js';
import { describeOnEachStore } from './gateways.js';

describeOnEachStore('event store', (gateway) => {
  let gw: TestGateway;
  let tenant: Tenant;
  let headers: Record<string, string>;
  let sql: SqlTransport;

  before(async () => {
    gw = await gateway();
    tenant = gw.tenant();
    headers = await tenant.headers();
    // A second connection to the gateway's store (chDB allows one to the same directory within a process).
    sql = await openStore(gw.config);
  });

  after(async () => {
    await sql.command('SYSTEM START MERGES events');
    await sql.close();
  });

  it('shows a redelivered event once, though both copies are stored', async () => {
    const event = canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId });
    // With merges stopped both copies stay in the table, so the feed query itself must fold them.
    await sql.command('SYSTEM STOP MERGES events');
    await gw.seed([event]);
    await gw.seed([event]);
    const [row] = await sql.query<{ n: string }>('SELECT count() AS n FROM events WHERE id = {id:UUID}', { id: event.id });
    expect(Number(row!.n)).to.equal(2);
    const feed = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events`, { headers });
    expect(feed.body.data.items.filter((e) => e.id === event.id)).to.have.length(1);
  });

  it('pages through redelivered copies with full pages, each event once, across page boundaries', async () => {
    const t = gw.tenant();
    const tHeaders = await t.headers();
    const series = eventSeries(7, { org_id: t.orgId, project_id: t.projectId });
    // Every event twice, in two parts: a raw read of 4 rows holds only 2 events, so pages must read on.
    await sql.command('SYSTEM STOP MERGES events');
    await gw.seed(series);
    await gw.seed(series);
    const pages: string[][] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor === null ? 'limit=3' : `limit=3&cursor=${encodeURIComponent(cursor)}`;
      const res = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${t.projectId}/events?${query}`, { headers: tHeaders });
      pages.push(res.body.data.items.map((e) => e.id));
      cursor = res.body.meta.next_cursor;
    } while (cursor !== null && pages.length < 10);
    expect(pages.map((p) => p.length)).to.deep.equal([3, 3, 1]);
    expect(pages.flat()).to.deep.equal(series.map((e) => e.id).reverse());
  });

  it('folds the copies for good when their parts merge', async () => {
    const event = canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId });
    await sql.command('SYSTEM STOP MERGES events');
    await gw.seed([event]);
    await gw.seed([event]);
    const count = async () => Number((await sql.query<{ n: string }>('SELECT count() AS n FROM events WHERE id = {id:UUID}', { id: event.id }))[0]!.n);
    expect(await count(), 'two parts, one copy each').to.equal(2);
    await sql.command('SYSTEM START MERGES events');
    await sql.command('OPTIMIZE TABLE events FINAL');
    expect(await count(), 'one row after the merge').to.equal(1);
    const feed = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events`, { headers });
    expect(feed.body.data.items.filter((e) => e.id === event.id)).to.have.length(1);
  });

  it('reads a keyset page through the primary key, in reverse order', async () => {
    const t = gw.tenant();
    await gw.seed(eventSeries(500, { org_id: t.orgId, project_id: t.projectId }));
    const { sql: query, params } = feedSql({
      orgId: t.orgId,
      projectId: t.projectId,
      filters: { domain: 'telemetry' },
      after: { occurredAt: '2026-01-01 00:04:00.000000', id: uuid() },
      limit: 51,
    });
    const plan = (await sql.query<{ explain: string }>(`EXPLAIN indexes = 1 ${query}`, params)).map((r) => r.explain).join('\n');
    expect(plan).to.match(/Read type: InReverseOrder/);
    const primaryKey = plan.slice(plan.indexOf('PrimaryKey'));
    expect(primaryKey).to.match(/Condition:.*occurred_at in \(-Inf,/);
    expect(primaryKey).to.match(/project_id in \[/);
  });

  it('keeps accepted commands and their events across a restart', async () => {
    const deviceId = uuid();
    const res = await gw.call<{ data: EnrollmentAccepted }>('POST', `/projects/${tenant.projectId}/fleets/${uuid()}/devices/${deviceId}/enroll`, {
      headers,
      body: { external_id: 'X-1' },
    });
    expect(res.status).to.equal(202);
    await gw.restart();
    const feed = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events?device_id=${deviceId}`, { headers });
    expect(feed.body.data.items.map((e) => e.correlation_id)).to.deep.equal([res.body.data.enrollment_id]);
    const logged = await sql.query<{ topic: string; key: string; value: string }>(
      'SELECT topic, key, value FROM command_log WHERE command_id = {id:UUID}',
      { id: res.body.data.enrollment_id },
    );
    expect(logged).to.have.length(1);
    expect(logged[0]).to.deep.include({ topic: 'core.device-enrollment.commands', key: deviceId });
    expect(JSON.parse(logged[0]!.value)).to.deep.include({ type: 'device.enroll', device_id: deviceId, body: { external_id: 'X-1' } });
  });
});
