import { expect } from 'chai';
import type { CanonicalEventPageResponse, EnrollmentAccepted } from '../../../src/generated/schema-types.js';
import { openStore } from '../../../src/runtime/store-runtime.js';
import { feedSql } from '../../../src/store/feed-sql.js';
import { PAGE_BATCHING } from '../../../src/store/batched-page-reads.js';
import { createClickHouseEventStore } from '../../../src/store/clickhouse-event-store.js';
import type { EventStore, FeedQuery } from '../../../src/store/event-store.js';
import { WINDOW_PLAN, type FeedWindow } from '../../../src/store/feed-windows.js';
import { createClickHouseServerTransport } from '../../../src/store/clickhouse-server-transport.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { canonicalEvent, eventSeries, uuid } from '../../support/factories.js';
import { isBatchOfReads, recordingTransport } from '../../support/recording-transport.js';
import { rowsRead } from '../../support/rows-read.js';
import { startTestGateway, type Tenant, type TestGateway } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import { clusterGatewayEnv, clusterInfra, type ClusterInfra } from './cluster-suite.js';

/**
 * The gateway on two real shards behind Distributed tables. Which shard holds a project
 * is the Distributed table's choice (cityHash64(org_id, project_id) over two shards of
 * equal weight); the tests ask the shards themselves where rows landed and what they ran.
 */
describe('the gateway on two ClickHouse shards [cluster]', function () {
  this.timeout(180_000);
  let infra: ClusterInfra;
  let gw: TestGateway;
  /** The gateway's entry transport, with its cluster read settings. */
  let entry: SqlTransport;
  /** Each shard's server on its own, in the gateway's database. */
  let shards: SqlTransport[] = [];

  before(async () => {
    infra = await clusterInfra();
    gw = await startTestGateway(clusterGatewayEnv(infra));
    entry = await openStore(gw.config);
    const config = gw.config.clickhouse!;
    shards = await Promise.all(infra.clickhouse.shards.map((s) => createClickHouseServerTransport({ ...config, url: s.url, cluster: undefined })));
  });

  after(async () => {
    for (const shard of shards) await shard.close();
    await entry?.close();
    await gw?.close();
  });

  /** 1 or 2: the shard whose events_local holds the project's rows (asked, not computed). */
  async function shardHolding(tenant: Tenant): Promise<number> {
    const counts = await Promise.all(
      shards.map(async (s) => {
        const [row] = await s.query<{ n: string }>('SELECT count() AS n FROM events_local WHERE org_id = {o:UUID} AND project_id = {p:UUID}', {
          o: tenant.orgId,
          p: tenant.projectId,
        });
        return Number(row!.n);
      }),
    );
    const holding = counts.flatMap((n, i) => (n > 0 ? [i + 1] : []));
    expect(holding, `shards holding project ${tenant.projectId}`).to.have.length(1);
    return holding[0]!;
  }

  /** A fresh tenant whose project lands on `shard`, with `events` seeded through the Distributed table. */
  async function tenantOn(shard: number, events: number): Promise<Tenant> {
    for (let attempt = 0; attempt < 64; attempt += 1) {
      const tenant = gw.tenant();
      await gw.seed([canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, occurred_at: '2025-12-31T00:00:00.000Z' })]);
      if ((await shardHolding(tenant)) !== shard) continue;
      if (events > 1) await gw.seed(eventSeries(events - 1, { org_id: tenant.orgId, project_id: tenant.projectId }));
      return tenant;
    }
    throw new Error(`no project landed on shard ${shard} in 64 tries`);
  }

  async function traverse(tenant: Tenant, limit: number): Promise<{ ids: string[]; pages: number }> {
    const headers = await tenant.headers();
    const ids: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = `?limit=${limit}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
      const page = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events${query}`, { headers });
      expect(page.status, JSON.stringify(page.body)).to.equal(200);
      ids.push(...page.body.data.items.map((e) => e.id));
      cursor = page.body.meta.next_cursor;
      pages += 1;
    } while (cursor !== null);
    return { ids, pages };
  }

  /** The server's own count of SELECT queries it has run (system.events), on one shard. */
  async function selectQueries(shard: number): Promise<number> {
    const [row] = await shards[shard - 1]!.query<{ n: string }>("SELECT value AS n FROM system.events WHERE event = 'SelectQuery'");
    return Number(row?.n ?? 0);
  }

  it('creates the local and Distributed tables on both shards, one shard after the other', async () => {
    for (const [i, shard] of shards.entries()) {
      const tables = await shard.query<{ name: string; engine: string }>(
        "SELECT name, engine FROM system.tables WHERE database = currentDatabase() AND name NOT LIKE 'idempotency_claims' ORDER BY name",
      );
      expect(tables.map((t) => `${t.name} ${t.engine}`), `shard ${i + 1}`).to.deep.equal([
        'command_log Distributed',
        'command_log_local MergeTree',
        'device_spans_v2 Distributed',
        'device_spans_v2_local AggregatingMergeTree',
        'device_spans_v2_view MaterializedView',
        'erasures Distributed',
        'erasures_local ReplacingMergeTree',
        'event_spans Distributed',
        'event_spans_local AggregatingMergeTree',
        'event_spans_view MaterializedView',
        'events Distributed',
        'events_by_device Distributed',
        'events_by_device_local ReplacingMergeTree',
        'events_by_device_view MaterializedView',
        'events_local ReplacingMergeTree',
        'idempotency_keys Distributed',
        'idempotency_keys_local MergeTree',
        'store_backfills MergeTree',
      ]);
    }
    // The servers have ZooKeeper: Idempotency-Key claims go to a KeeperMap table, one map for all.
    const [claims] = await entry.query<{ engine: string }>("SELECT engine FROM system.tables WHERE database = currentDatabase() AND name = 'idempotency_claims'");
    expect(claims?.engine).to.equal('KeeperMap');
  });

  it('spreads the events of many organizations over both shards, each project whole on one', async () => {
    const tenants = Array.from({ length: 40 }, () => gw.tenant());
    await gw.seed(tenants.flatMap((t) => eventSeries(25, { org_id: t.orgId, project_id: t.projectId })));
    const orgIds = tenants.map((t) => t.orgId);
    const perShard = await Promise.all(
      shards.map((s) =>
        s.query<{ org_id: string; project_id: string; n: string }>(
          'SELECT org_id, project_id, count() AS n FROM events_local WHERE org_id IN {orgs:Array(UUID)} GROUP BY org_id, project_id',
          { orgs: orgIds },
        ),
      ),
    );
    expect(perShard[0], 'projects on shard 1').to.have.length.above(0);
    expect(perShard[1], 'projects on shard 2').to.have.length.above(0);
    const where = new Map<string, number>();
    for (const [i, rows] of perShard.entries()) {
      for (const row of rows) {
        expect(where.has(row.project_id), `project ${row.project_id} on one shard only`).to.equal(false);
        where.set(row.project_id, i + 1);
        expect(Number(row.n), 'every event of the project on its shard').to.equal(25);
      }
    }
    expect(where.size).to.equal(40);
  });

  it('plans every feed page, first and by cursor, plain or in a time window, as one read: local on shard 1, remote on shard 2', async () => {
    const onOne = await tenantOn(1, 3);
    const onTwo = await tenantOn(2, 3);
    const plan = async (tenant: Tenant, after: { occurredAt: string; id: string } | undefined, window: FeedWindow): Promise<string> => {
      const { sql, params } = feedSql({ orgId: tenant.orgId, projectId: tenant.projectId, filters: {}, after, limit: 51 }, window);
      return (await entry.query<{ explain: string }>(`EXPLAIN ${sql}`, params)).map((r) => r.explain).join('\n');
    };
    const cursorAt = { occurredAt: '2026-01-01 00:00:01.000000', id: uuid() };
    // The windows a page reads (src/store/feed-windows.ts): the first has no upper end, the later ones both.
    const windows: FeedWindow[] = [{}, { from: '2026-01-01 00:00:00.000000' }, { from: '2025-12-01 00:00:00.000000', to: '2026-01-01 00:00:00.000000' }];
    for (const after of [undefined, cursorAt]) {
      for (const window of windows) {
        const local = await plan(onOne, after, window);
        expect(local).to.match(/ReadFromMergeTree \(\w+\.events_local\)/);
        expect(local).to.not.match(/ReadFromRemote/);
        const remote = await plan(onTwo, after, window);
        expect(remote).to.match(/ReadFromRemote/);
        expect(remote).to.not.match(/ReadFromMergeTree/);
      }
    }
    // The same check on a read that does not fix the sharding key sees both shards: it can fail.
    // It reads rows, as the feed does: a count() over a prefix of the sort key may be answered
    // from the primary index alone (_exact_count_projection), with no ReadFromMergeTree step.
    const everywhere = (await entry.query<{ explain: string }>('EXPLAIN SELECT id FROM events WHERE org_id = {o:UUID} LIMIT 10', { o: onOne.orgId }))
      .map((r) => r.explain)
      .join('\n');
    expect(everywhere).to.match(/ReadFromRemote/).and.to.match(/ReadFromMergeTree/);
  });

  it("counts on shard 2's own counters the queries of its projects' pages, within the windows' bound, and none for shard 1's", async () => {
    const onOne = await tenantOn(1, 120);
    const onTwo = await tenantOn(2, 120);
    // Reading the counter is a SELECT itself: measure what a read of it alone adds.
    const idle = -(await selectQueries(2)) + (await selectQueries(2));

    let before = await selectQueries(2);
    const first = await traverse(onOne, 25);
    expect(first.ids).to.have.length(120);
    expect((await selectQueries(2)) - before, 'queries on shard 2 while paging a shard-1 project').to.equal(idle);

    before = await selectQueries(2);
    const second = await traverse(onTwo, 25);
    expect(second.ids).to.have.length(120);
    expect(second.pages).to.equal(5);
    // A page reads window after window until it is full (src/store/feed-windows.ts): these
    // events are months old, so the first page's windows widen back to them, and the last
    // page's run out below the oldest event and ask once whether anything older exists.
    const queries = (await selectQueries(2)) - before - idle;
    expect(queries, 'queries on shard 2 while paging a shard-2 project').to.be.within(second.pages + 1, second.pages * (WINDOW_PLAN.probes + 1));
  });

  it("reads a device page as one query of its shard's device table, a granule a month of the device's history at most", async () => {
    const months = 20;
    for (const shard of [1, 2]) {
      const tenant = await tenantOn(shard, 1);
      const device = uuid();
      // Months no other test writes, so that the device table's parts there hold this device alone.
      const start = Date.parse('2041-12-31T00:00:00Z');
      const history = Array.from({ length: 200 }, (_, k) =>
        canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, device_id: device, occurred_at: new Date(start - k * 3 * 86_400_000).toISOString() }),
      );
      await gw.seed(history);
      const query: FeedQuery = { orgId: tenant.orgId, projectId: tenant.projectId, filters: { deviceId: device }, after: undefined, limit: 51 };
      const counted = recordingTransport(entry);
      const page = await createClickHouseEventStore(counted, { batching: false }).listEvents(query);
      expect(page.events.map((e) => e.event.id), `shard ${shard}`).to.deep.equal(history.slice(0, 51).map((e) => e.id));
      expect(counted.sent, `one query, shard ${shard}`).to.have.length(1);
      const { sql, params } = feedSql(query);
      const read = await rowsRead(gw.config, sql, params);
      // The entry node's summary counts the remote shard's reads too.
      expect(read, `rows read for a page of a device on shard ${shard}`).to.be.within(51, months * 1024 + 51);
    }
  });

  it('reads the pages of projects on both shards at once, in batches through the Distributed table, each page as read alone', async () => {
    const tenants = [await tenantOn(1, 30), await tenantOn(2, 30), await tenantOn(1, 30), await tenantOn(2, 30)];
    const counted = recordingTransport(entry);
    const now = Date.now();
    const walk = async (store: EventStore, tenant: Tenant) => {
      const pages: string[][] = [];
      let after: FeedQuery['after'];
      do {
        const slice = await store.listEvents({ orgId: tenant.orgId, projectId: tenant.projectId, filters: {}, after, limit: 8 });
        const page = slice.events.slice(0, 7);
        pages.push(page.map((e) => e.event.id));
        after = slice.events.length > 7 ? page.at(-1)!.position : slice.resumeAfter;
      } while (after !== undefined);
      return pages;
    };
    const alone = createClickHouseEventStore(entry, { now: () => now, batching: false });
    const expected = [];
    for (const tenant of tenants) expected.push(await walk(alone, tenant));
    expect(expected.map((pages) => pages.flat().length)).to.deep.equal([30, 30, 30, 30]);
    const together = createClickHouseEventStore(counted, { now: () => now, batching: { ...PAGE_BATCHING, inFlight: 1 } });
    expect(await Promise.all(tenants.map((tenant) => walk(together, tenant)))).to.deep.equal(expected);
    expect(counted.sent.filter(isBatchOfReads).length, 'batches sent').to.be.above(0);
  });

  it('traverses a project by cursor with no gap and no repeat while ingestion runs on both shards', async () => {
    for (const shard of [1, 2]) {
      const tenant = await tenantOn(shard, 400);
      const expected = new Set(
        (await shards[shard - 1]!.query<{ id: string }>('SELECT DISTINCT id FROM events_local WHERE org_id = {o:UUID}', { o: tenant.orgId })).map((r) => r.id),
      );
      expect(expected.size).to.equal(400);
      let ingesting = true;
      let batches = 0;
      const ingestion = (async () => {
        while (ingesting) {
          // Other organizations on either shard, and newer events of this project, which sort ahead of the cursor.
          const others = Array.from({ length: 4 }, () => gw.tenant());
          await gw.seed([
            ...others.flatMap((t) => eventSeries(20, { org_id: t.orgId, project_id: t.projectId })),
            ...eventSeries(5, { org_id: tenant.orgId, project_id: tenant.projectId }, Date.parse('2027-01-01T00:00:00Z') + batches * 10_000),
          ]);
          batches += 1;
        }
      })();
      try {
        const seen: string[] = [];
        const headers = await tenant.headers();
        // The first page is read before traversal starts, so events ingested during it sort ahead of its cursor.
        const firstPage = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events?limit=1`, { headers });
        let cursor = firstPage.body.meta.next_cursor;
        seen.push(...firstPage.body.data.items.map((e) => e.id));
        await waitFor('ingestion under way', async () => (batches >= 1 ? true : undefined), 30_000, 20);
        while (cursor !== null) {
          const page = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events?limit=37&cursor=${encodeURIComponent(cursor)}`, { headers });
          expect(page.status).to.equal(200);
          seen.push(...page.body.data.items.map((e) => e.id));
          cursor = page.body.meta.next_cursor;
        }
        const afterFirst = seen.slice(1);
        expect(new Set(afterFirst).size, 'no repeat').to.equal(afterFirst.length);
        // Everything of the project older than the first page, exactly once.
        const olderThanFirst = [...expected].filter((id) => id !== seen[0]);
        const firstWasOld = expected.has(seen[0]!);
        expect(afterFirst.filter((id) => expected.has(id)).sort(), `shard ${shard}: every event, none missing`).to.deep.equal(
          (firstWasOld ? olderThanFirst : [...expected]).sort(),
        );
      } finally {
        ingesting = false;
        await ingestion;
      }
      expect(batches, 'batches ingested while paging').to.be.greaterThan(0);
    }
  });

  it('enrolls and answers an Idempotency-Key retry the same, for projects on either shard', async () => {
    for (const shard of [1, 2]) {
      const tenant = await tenantOn(shard, 1);
      const headers = { ...(await tenant.headers()), 'idempotency-key': `key-${shard}` };
      const deviceId = uuid();
      const path = `/projects/${tenant.projectId}/fleets/${uuid()}/devices/${deviceId}/enroll`;
      const first = await gw.call<{ data: EnrollmentAccepted }>('POST', path, { headers, body: { display_name: `on shard ${shard}` } });
      const retry = await gw.call<{ data: EnrollmentAccepted }>('POST', path, { headers, body: { display_name: `on shard ${shard}` } });
      expect(first.status).to.equal(202);
      expect(retry.body).to.deep.equal(first.body);
      const feed = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events?device_id=${deviceId}`, { headers: await tenant.headers() });
      expect(feed.body.data.items.map((e) => e.correlation_id)).to.deep.equal([first.body.data.enrollment_id]);
      expect(await shardHolding(tenant)).to.equal(shard);
    }
  });

  it('keeps answering for projects on shard 1 while shard 2 is SIGKILLed, 503 for those on shard 2, and recovers without a restart', async () => {
    const onOne = await tenantOn(1, 30);
    const onTwo = await tenantOn(2, 30);
    const page = async (tenant: Tenant) =>
      gw.call<CanonicalEventPageResponse & { message?: string }>('GET', `/projects/${tenant.projectId}/events?limit=10`, { headers: await tenant.headers() });
    const before = { one: await page(onOne), two: await page(onTwo) };
    expect(before.one.status).to.equal(200);
    expect(before.two.status).to.equal(200);

    await infra.clickhouse.shards[1]!.kill();
    try {
      const down = await page(onTwo);
      expect(down.status, JSON.stringify(down.body)).to.equal(503);
      expect(down.body).to.deep.include({ ok: 0 });
      const up = await page(onOne);
      expect(up.status).to.equal(200);
      expect(up.body.data.items).to.deep.equal(before.one.body.data.items);
      const traversal = await traverse(onOne, 7);
      expect(new Set(traversal.ids).size).to.equal(30);
    } finally {
      await infra.clickhouse.resume();
    }
    const back = await waitFor('shard 2 answering again through the same gateway', async () => {
      const res = await page(onTwo);
      return res.status === 200 ? res : undefined;
    }, 60_000, 200);
    expect(back.body.data.items).to.deep.equal(before.two.body.data.items);
    expect((await page(onOne)).body.data.items).to.deep.equal(before.one.body.data.items);
  });
});
