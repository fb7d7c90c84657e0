import { expect } from 'chai';
import type { CanonicalEventPageResponse, EnrollmentAccepted } from '../../../src/generated/schema-types.js';
import { feedSql } from '../../../src/store/feed-sql.js';
import { PAGE_BATCHING } from '../../../src/store/batched-page-reads.js';
import { createClickHouseEventStore } from '../../../src/store/clickhouse-event-store.js';
import type { EventStore } from '../../../src/store/event-store.js';
import { openStore } from '../../../src/runtime/store-runtime.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { startClickHouseServer, type ClickHouseServerHandle } from '../../support/clickhouse-server.js';
import { eventSeries, uuid } from '../../support/factories.js';
import { isBatchOfReads, recordingTransport } from '../../support/recording-transport.js';
import { pickInfra } from '../../support/infra.js';
import { storeEnvironment, skipUnlessServerStoreTested } from '../../support/stores.js';
import { openEventStream } from '../../support/sse-reader.js';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.js';
import { LIVE_TAIL_ENV } from './gateways.js';

/**
 * CLICKHOUSE_CLUSTER on a one-shard cluster the local server defines: the gateway's
 * own migrations, reads and writes through Distributed tables. Replicated tables and ON
 * CLUSTER need Keeper, which the local server has not, so the cluster is unreplicated
 * (CLICKHOUSE_CLUSTER_REPLICATED=false); test/unit/store/migrations.test.ts checks the
 * replicated statements.
 */
describe('the gateway on a ClickHouse cluster, through Distributed tables [clickhouse-server]', function () {
  this.timeout(120_000);
  let server: ClickHouseServerHandle | undefined;
  let gw: TestGateway | undefined;
  let sql: SqlTransport | undefined;

  before(async function () {
    skipUnlessServerStoreTested(this);
    if ((await pickInfra()) !== 'local') {
      console.log('      the cluster test needs the local server launcher (TEST_INFRA=local): skipped by choice');
      this.skip();
    }
    server = await startClickHouseServer({ cluster: 'gateway_cluster' });
    gw = await startTestGateway({
      ...storeEnvironment('clickhouse-server', server.url),
      CLICKHOUSE_CLUSTER: 'gateway_cluster',
      CLICKHOUSE_CLUSTER_REPLICATED: 'false',
      ...LIVE_TAIL_ENV,
    });
    sql = await openStore(gw.config);
  });

  after(async () => {
    await sql?.close();
    await gw?.close();
    await server?.stop();
  });

  it('creates each table as a local table under a Distributed one sharded by its lookup key', async () => {
    const tables = await sql!.query<{ name: string; engine: string; engine_full: string }>(
      'SELECT name, engine, engine_full FROM system.tables WHERE database = currentDatabase() ORDER BY name',
    );
    expect(tables.map((t) => `${t.name} ${t.engine}`)).to.deep.equal([
      'command_log Distributed',
      'command_log_local MergeTree',
      'device_spans_v2 Distributed',
      'device_spans_v2_local AggregatingMergeTree',
      'device_spans_v2_view MaterializedView',
      'erasures Distributed',
      'erasures_local ReplacingMergeTree',
      'event_spans Distributed',
      'event_spans_local AggregatingMergeTree',
      // On the local table: it runs on the inserts each shard takes.
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
    expect(tables.find((t) => t.name === 'event_spans')!.engine_full).to.match(/^Distributed\('gateway_cluster', '\w+', 'event_spans_local', cityHash64\(org_id, project_id\)\)/);
    expect(tables.find((t) => t.name === 'events')!.engine_full).to.match(/^Distributed\('gateway_cluster', '\w+', 'events_local', cityHash64\(org_id, project_id\)\)/);
  });

  it("puts the live tail's ingestion-time skip index and the feed's project and filter indexes on the local events table", async () => {
    const indexes = await sql!.query<{ table: string; name: string; type: string }>(
      "SELECT table, name, type FROM system.data_skipping_indices WHERE database = currentDatabase() AND table LIKE 'events%' AND type IN ('minmax', 'set') ORDER BY name",
    );
    expect(indexes).to.deep.equal([
      { table: 'events_local', name: 'action_idx', type: 'set' },
      { table: 'events_local', name: 'domain_idx', type: 'set' },
      { table: 'events_local', name: 'entity_idx', type: 'set' },
      { table: 'events_local', name: 'ingested_idx', type: 'minmax' },
      { table: 'events_local', name: 'project_idx', type: 'set' },
    ]);
  });

  it('enrolls, answers an Idempotency-Key retry as before, and pages the feed, all through the Distributed tables', async () => {
    const tenant = gw!.tenant();
    const headers = await tenant.headers();
    const path = `/projects/${tenant.projectId}/fleets/${uuid()}/devices/${uuid()}/enroll`;
    const first = await gw!.call<{ data: EnrollmentAccepted }>('POST', path, { headers: { ...headers, 'idempotency-key': 'k-1' }, body: {} });
    const retry = await gw!.call<{ data: EnrollmentAccepted }>('POST', path, { headers: { ...headers, 'idempotency-key': 'k-1' }, body: {} });
    expect(first.status).to.equal(202);
    expect(retry.body).to.deep.equal(first.body);

    await gw!.seed(eventSeries(450, { org_id: tenant.orgId, project_id: tenant.projectId }));
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `?limit=200${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
      const page = await gw!.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events${query}`, { headers });
      seen.push(...page.body.data.items.map((e) => e.id));
      cursor = page.body.meta.next_cursor;
    } while (cursor !== null);
    expect(seen).to.have.length(451);
    expect(new Set(seen).size).to.equal(451);
    // The retry wrote its copy too; both carry the same event id, which the feed shows once.
    const [row] = await sql!.query<{ ids: string }>('SELECT uniqExact(id) AS ids FROM events_local WHERE correlation_id = {id:UUID}', { id: first.body.data.enrollment_id });
    expect(Number(row!.ids), 'one enrollment event in the shard').to.equal(1);
  });

  it('tails a project through the Distributed table, a redelivered copy once', async () => {
    const tenant = gw!.tenant();
    const res = await openEventStream(`${gw!.baseUrl}/projects/${tenant.projectId}/events/stream`, await tenant.headers());
    const stream = res.stream!;
    // A merge that folded the copies first would leave only the later one, which the tail cannot tell from a new event (docs/decisions/live-tail-duplicates.md).
    await sql!.command('SYSTEM STOP MERGES events_local');
    try {
      const [a, b] = eventSeries(2, { org_id: tenant.orgId, project_id: tenant.projectId });
      await gw!.seed([a!]);
      await stream.until('the first event', (s) => s.messages.length === 1);
      await gw!.seed([a!]);
      await gw!.seed([b!]);
      await stream.until('the second event', (s) => s.messages.length >= 2);
      expect(stream.messages.map((m) => (JSON.parse(m.data) as { id: string }).id)).to.deep.equal([a!.id, b!.id]);
    } finally {
      await sql!.command('SYSTEM START MERGES events_local');
      await stream.close();
    }
  });

  it('reads the pages of many projects at once in batches through the Distributed table, each page as read alone', async () => {
    const tenants = Array.from({ length: 8 }, () => gw!.tenant());
    // A minute of history per project, ending a second ago: within the first windows.
    const start = Date.now() - 61_000;
    await gw!.seed(tenants.flatMap((t) => eventSeries(60, { org_id: t.orgId, project_id: t.projectId }, start)));
    const counted = recordingTransport(sql!);
    const now = Date.now();
    const alone = createClickHouseEventStore(sql!, { now: () => now, batching: false });
    const together = createClickHouseEventStore(counted, { now: () => now, batching: { ...PAGE_BATCHING, inFlight: 1 } });
    const pages = (store: EventStore) =>
      Promise.all(tenants.map(async (t) => (await store.listEvents({ orgId: t.orgId, projectId: t.projectId, filters: {}, after: undefined, limit: 20 })).events.map((e) => e.event)));
    const expected = await pages(alone);
    expect(expected.map((page) => page.length)).to.deep.equal(tenants.map(() => 20));
    expect(await pages(together)).to.deep.equal(expected);
    expect(counted.sent.filter(isBatchOfReads).length, 'batches sent').to.be.above(0);
  });

  it("ends the page of an empty project, and of a filter that matches nothing, in one query whose span is read through the Distributed table", async () => {
    const tenant = gw!.tenant();
    await gw!.seed(eventSeries(5, { org_id: tenant.orgId, project_id: tenant.projectId }));
    const counted = recordingTransport(sql!);
    const store = createClickHouseEventStore(counted, { batching: false });
    const page = async (projectId: string, filters: Parameters<EventStore['listEvents']>[0]['filters']) => {
      const before = counted.sent.length;
      const slice = await store.listEvents({ orgId: tenant.orgId, projectId, filters, after: undefined, limit: 10 });
      return { ids: slice.events.map((e) => e.event.id), resumeAfter: slice.resumeAfter, queries: counted.sent.length - before };
    };
    expect(await page(uuid(), {}), "an empty project: the first read, with the span that holds nothing").to.deep.equal({ ids: [], resumeAfter: undefined, queries: 1 });
    expect(await page(tenant.projectId, { action: 'never-happened' }), 'nothing matches').to.deep.equal({ ids: [], resumeAfter: undefined, queries: 1 });
    const [span] = await sql!.query<{ rows: string }>('SELECT count() AS rows FROM event_spans_local WHERE project_id = {p:UUID}', { p: tenant.projectId });
    expect(Number(span!.rows), "the project's span, on its shard's local table").to.be.above(0);
  });

  it("reads a feed page through the shard's primary key, in reverse order", async () => {
    const tenant = gw!.tenant();
    const { sql: query, params } = feedSql({ orgId: tenant.orgId, projectId: tenant.projectId, filters: {}, after: undefined, limit: 51 });
    const plan = (await sql!.query<{ explain: string }>(`EXPLAIN indexes = 1 ${query}`, params)).map((r) => r.explain).join('\n');
    expect(plan).to.match(/ReadFromMergeTree \(\w+\.events_local\)/);
    expect(plan).to.match(/Read type: InReverseOrder/);
    expect(plan.slice(plan.indexOf('PrimaryKey'))).to.match(/project_id in \[/);
  });

  it("reads a device page in one query of the device table's local table on the shard, in reverse order", async () => {
    const tenant = gw!.tenant();
    const device = uuid();
    await gw!.seed(eventSeries(30, { org_id: tenant.orgId, project_id: tenant.projectId, device_id: device }));
    const { sql: query, params } = feedSql({ orgId: tenant.orgId, projectId: tenant.projectId, filters: { deviceId: device }, after: undefined, limit: 51 });
    const plan = (await sql!.query<{ explain: string }>(`EXPLAIN indexes = 1 ${query}`, params)).map((r) => r.explain).join('\n');
    expect(plan).to.match(/ReadFromMergeTree \(\w+\.events_by_device_local\)/);
    expect(plan).to.match(/Read type: InReverseOrder/);
    const counted = recordingTransport(sql!);
    const page = await createClickHouseEventStore(counted, { batching: false }).listEvents({ orgId: tenant.orgId, projectId: tenant.projectId, filters: { deviceId: device }, after: undefined, limit: 10 });
    expect(page.events.map((e) => e.event.device_id)).to.deep.equal(Array.from({ length: 10 }, () => device));
    expect(counted.sent, 'one query').to.have.length(1);
  });
});
