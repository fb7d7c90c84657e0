import { expect } from 'chai';
import type { CanonicalEventPageResponse } from '../../../src/generated/schema-types.js';
import { openStore } from '../../../src/runtime/store-runtime.js';
import { createClickHouseEventStore } from '../../../src/store/clickhouse-event-store.js';
import { storableEvent } from '../../../src/store/event-rows.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { eventSeries } from '../../support/factories.js';
import { storeEnvironment } from '../../support/stores.js';
import { request } from '../../support/http-client.js';
import { parseMetrics, samplesOf } from '../../support/metrics-text.js';
import { startTestGateway, type Tenant, type TestGateway } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import { clickhouseServer } from './gateways.js';

/**
 * Gateways that keep first pages for up to a minute (FEED_FIRST_PAGE_MAX_AGE_MS),
 * on the server store: chDB binds one data directory per process, so only the server can
 * have gateways of this file's own. The cache and its watch are the same on both
 * (src/feed/first-page-cache/first-page-cache.ts, src/feed/first-page-cache/first-page-watch.ts).
 */
describe('feed first pages kept in memory [clickhouse-server]', function () {
  this.timeout(120_000);
  let url: string;
  const opened: { gw: TestGateway; sql: SqlTransport }[] = [];

  before(async () => {
    url = (await clickhouseServer()).url;
  });

  after(async () => {
    for (const { gw, sql } of opened) {
      await sql.close();
      await gw.close();
    }
  });

  /**
   * A gateway (each has a database of its own) whose watch of the store's writes has made
   * its first poll, so it keeps pages; `elsewhere` writes events into its database behind
   * its back, as another gateway's ingestion would.
   */
  const gateway = async (env: Record<string, string>) => {
    const gw = await startTestGateway({ ...storeEnvironment('clickhouse-server', url), FEED_FIRST_PAGE_MAX_AGE_MS: '60000', ...env });
    const sql = await openStore(gw.config);
    opened.push({ gw, sql });
    await waitFor('the watch of the store\'s writes to follow them', async () => ((await metric(gw, 'feed_first_pages_watched')) === 1 ? true : undefined));
    const scraped = parseMetrics((await request('GET', new URL('/metrics', gw.baseUrl).toString())).text);
    expect(samplesOf(scraped, 'feed_first_pages_lost_track_total', {}), "the count of the watch's lost track, one series").to.have.length(1);
    const elsewhere = (tenant: Tenant, count: number, start: number) =>
      createClickHouseEventStore(sql).insertEvents(eventSeries(count, { org_id: tenant.orgId, project_id: tenant.projectId }, start).map(storableEvent));
    return { gw, elsewhere };
  };

  const metric = async (gw: TestGateway, name: string, labels: Record<string, string> = {}) =>
    samplesOf(parseMetrics((await request('GET', new URL('/metrics', gw.baseUrl).toString())).text), name, labels).reduce((n, s) => n + s.value, 0);

  const firstItems = async (gw: TestGateway, tenant: Tenant, query = '') => {
    const res = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events${query}`, { headers: await tenant.headers() });
    expect(res.status).to.equal(200);
    return res.body.data.items;
  };
  const firstPage = async (gw: TestGateway, tenant: Tenant, query = '') => (await firstItems(gw, tenant, query)).map((e) => e.id);

  /** A first page answered from memory: read until one is. */
  const keptPage = (gw: TestGateway, who: Tenant) =>
    waitFor('a first page answered from memory', async () => {
      const before = await metric(gw, 'feed_first_pages_total', { source: 'memory' });
      const ids = await firstPage(gw, who);
      return (await metric(gw, 'feed_first_pages_total', { source: 'memory' })) > before ? ids : undefined;
    });

  describe('while the watch has not seen a write', () => {
    // Rows count as seen only once they are ten minutes old: no write of this test is seen.
    // Polls 5 s apart: a poll that outlasts its interval leaves the cache blind, and a
    // loaded machine must not make that happen here.
    let gw: TestGateway;
    let elsewhere: Awaited<ReturnType<typeof gateway>>['elsewhere'];
    before(async () => {
      ({ gw, elsewhere } = await gateway({ STREAM_SETTLE_MS: '600000', STREAM_POLL_MS: '5000' }));
    });

    it("serves the kept first page from memory, and brings it up to date in memory with this process's own ingestion at once", async () => {
      const tenant = gw.tenant();
      await gw.seed(eventSeries(3, { org_id: tenant.orgId, project_id: tenant.projectId }));
      const kept = await firstPage(gw, tenant);
      expect(kept).to.have.length(3);
      await elsewhere(tenant, 2, Date.parse('2026-02-01T00:00:00Z'));
      const fromMemory = await metric(gw, 'feed_first_pages_total', { source: 'memory' });
      expect(await firstPage(gw, tenant), 'the kept page').to.deep.equal(kept);
      expect(await metric(gw, 'feed_first_pages_total', { source: 'memory' }), 'answered from memory').to.equal(fromMemory + 1);
      expect(await firstPage(gw, tenant, '?limit=10'), 'another page size is another page, read now').to.have.length(5);
      const [own] = eventSeries(1, { org_id: tenant.orgId, project_id: tenant.projectId }, Date.parse('2026-03-01T00:00:00Z'));
      await gw.seed([own!]);
      const afterOwn = await metric(gw, 'feed_first_pages_total', { source: 'memory' });
      // The other process's two events come when the watch sees them (never, in this block).
      const [ownItem, ...rest] = await firstItems(gw, tenant);
      expect([ownItem?.id, ...rest.map((e) => e.id)], 'its own write on top of the kept page').to.deep.equal([own!.id, ...kept]);
      expect(await metric(gw, 'feed_first_pages_total', { source: 'memory' }), 'answered from memory').to.equal(afterOwn + 1);
      // Another page size is read from the store: the event as the store gives it back.
      const read = (await firstItems(gw, tenant, '?limit=11')).find((e) => e.id === own!.id);
      expect(ownItem, 'the event as a read gives it').to.deep.equal(read);
    });

    it('cuts the second page from the kept first page, the same events as a gateway that keeps none reads, and reads the third', async () => {
      const tenant = gw.tenant();
      await gw.seed(eventSeries(7, { org_id: tenant.orgId, project_id: tenant.projectId }));
      const walk = async (at: TestGateway, headers: Record<string, string>) => {
        const pages: CanonicalEventPageResponse[] = [];
        let query = '?limit=2';
        for (let n = 0; n < 4; n += 1) {
          const res = await at.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events${query}`, { headers });
          expect(res.status).to.equal(200);
          pages.push(res.body);
          if (res.body.meta.next_cursor === null) break;
          query = `?limit=2&cursor=${encodeURIComponent(res.body.meta.next_cursor)}`;
        }
        return pages;
      };
      const cursorPages = async () => [await metric(gw, 'feed_cursor_pages_total', { source: 'memory' }), await metric(gw, 'feed_cursor_pages_total', { source: 'store' })];
      const before = await cursorPages();
      const kept = await walk(gw, await tenant.headers());
      const after = await cursorPages();
      expect([after[0]! - before[0]!, after[1]! - before[1]!], 'the second page from memory; the third and fourth from the store').to.deep.equal([1, 2]);
      // A gateway on the same database that keeps no first page: every page read from the store.
      const plain = await startTestGateway({
        ...storeEnvironment('clickhouse-server', url),
        CLICKHOUSE_DATABASE: gw.config.clickhouse!.database,
        AUTH_JWT_SECRET: gw.secret,
        FEED_FIRST_PAGE_MAX_AGE_MS: '0',
      });
      try {
        // Cursors are sealed with each gateway's own secret: the same pages, told apart only by them.
        const shown = (pages: CanonicalEventPageResponse[]) => pages.map((p) => ({ data: p.data, count: p.meta.count, has_more: p.meta.has_more }));
        expect(shown(kept)).to.deep.equal(shown(await walk(plain, await tenant.headers())));
      } finally {
        await plain.close();
      }
    });

    it('keeps the pages of one project id in two organizations apart', async () => {
      const a = gw.tenant();
      const other = gw.tenant();
      // Organization B, with the same project id as A's.
      const b: Tenant = { orgId: other.orgId, projectId: a.projectId, headers: (options) => other.headers(options) };
      await gw.seed(eventSeries(2, { org_id: a.orgId, project_id: a.projectId }));
      const pageA = await firstPage(gw, a);
      expect(pageA).to.have.length(2);
      expect(await firstPage(gw, b), "B's own page, not A's kept one").to.deep.equal([]);
      await gw.seed(eventSeries(1, { org_id: b.orgId, project_id: b.projectId }, Date.parse('2026-04-01T00:00:00Z')));
      const pageB = await firstPage(gw, b);
      expect(pageB, "B's write dropped B's page only").to.have.length(1);
      expect(pageA).to.not.include(pageB[0]);
      expect(await firstPage(gw, a), "A's kept page").to.deep.equal(pageA);
    });
  });

  it("shows another process's write in a kept first page once the watch sees it, long before the page's age", async () => {
    // Rows count as seen after a second (an insert may become visible tens of milliseconds
    // after its ingested_at, docs/decisions/live-tail-settle-window.md); polls a second apart, so that
    // only a poll (or a stall of this process) over a second leaves the cache blind.
    const { gw, elsewhere } = await gateway({ STREAM_SETTLE_MS: '1000', STREAM_POLL_MS: '1000' });
    const [tenant, quiet] = [gw.tenant(), gw.tenant()];
    await gw.seed([...eventSeries(3, { org_id: tenant.orgId, project_id: tenant.projectId }), ...eventSeries(2, { org_id: quiet.orgId, project_id: quiet.projectId })]);
    const memoryReads = () => metric(gw, 'feed_first_pages_total', { source: 'memory' });
    /** Waits for another process's write to show in the first page: well within the page's minute, so only the watch can have brought it in. */
    const shows = (count: number) =>
      waitFor(`${count} events in the first page`, async () => {
        const ids = await firstPage(gw, tenant);
        return ids.length === count ? ids : undefined;
      }, 30_000);

    const kept = await keptPage(gw, tenant);
    await elsewhere(tenant, 2, Date.parse('2026-02-01T00:00:00Z'));
    expect(await shows(5)).to.include.members(kept);
    // The watch has passed the seed (written before), so nothing will drop this page but a write of its project.
    const keptQuiet = await keptPage(gw, quiet);
    await elsewhere(tenant, 1, Date.parse('2026-03-01T00:00:00Z'));
    await shows(6);
    const before = await memoryReads();
    expect(await firstPage(gw, quiet), 'a project nobody wrote: its kept page').to.deep.equal(keptQuiet);
    expect(await memoryReads(), 'answered from memory').to.equal(before + 1);
  });

  it("brings a kept page up to date in memory once the watch sees another process's write of its project, reading nothing again", async () => {
    // As above: rows seen after a second, polls a second apart.
    const { gw, elsewhere } = await gateway({ STREAM_SETTLE_MS: '1000', STREAM_POLL_MS: '1000' });
    const tenant = gw.tenant();
    await gw.seed(eventSeries(3, { org_id: tenant.orgId, project_id: tenant.projectId }));
    const counts = async () => ({
      merged: await metric(gw, 'feed_first_pages_merged_total'),
      refreshed: await metric(gw, 'feed_first_pages_refreshed_total'),
      fromStore: await metric(gw, 'feed_first_pages_total', { source: 'store' }),
      lostTrack: await metric(gw, 'feed_first_pages_lost_track_total'),
    });
    let kept = await keptPage(gw, tenant);
    // A blind spell of the watch on a loaded machine sends the page's reads to the store,
    // and a page asked long enough is read again ahead of its expiry: then the round says
    // nothing, and another runs with one more event.
    let events = 3;
    await waitFor('a round in which a write was brought into the kept page, answered from memory, with no store read', async () => {
      const before = await counts();
      // Newer than every event before it, so it heads the page.
      await elsewhere(tenant, 1, Date.parse('2026-02-01T00:00:00Z') + events * 1000);
      events += 1;
      const page = await waitFor(`${events} events in the first page`, async () => {
        const ids = await firstPage(gw, tenant);
        return ids.length === events ? ids : undefined;
      }, 30_000);
      const after = await counts();
      const clean = after.merged > before.merged && after.refreshed === before.refreshed && after.fromStore === before.fromStore && after.lostTrack === before.lostTrack;
      const previous = kept;
      kept = page;
      if (!clean) return undefined;
      expect(page.slice(1), 'the new event first, then the page kept before').to.deep.equal(previous);
      return true;
    }, 90_000, 0);
  });
});
