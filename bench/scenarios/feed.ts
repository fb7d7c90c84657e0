import { randomUUID } from 'node:crypto';
import type { CanonicalEventPageResponse } from '../../src/generated/schema-types.js';
import type { FeedFilters, FeedQuery } from '../../src/store/event-store.js';
import { feedSql } from '../../src/store/feed-sql.js';
import type { SqlParams } from '../../src/store/sql-transport.js';
import { toStoreTimestamp } from '../../src/store/timestamps.js';
import { autocannon, variedAutocannon } from '../support/autocannon.js';
import { callerHeaders, type BenchContext } from '../support/context.js';
import type { Row } from '../support/results.js';
import { latencies } from './ceiling.js';
import { startKafkaGateway } from './commands.js';

const CONNECTIONS = 50;
/** Positions the "no shared reads" load takes in turn: far more than connections, so no two requests in flight are the same page. */
const DISTINCT_PAGES = 500;
const PAGE = 50;
const START = '2026-01-01 00:00:00';

/** A page shape: the query the gateway is sent, and the store query it makes of it. */
interface Shape {
  readonly name: string;
  readonly query: Record<string, string>;
  readonly filters: FeedFilters;
}

const device = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const fleet = (n: number) => `00000000-0000-4000-9000-${String(n).padStart(12, '0')}`;

/** SQL over the server's HTTP interface, as a URL autocannon can send again and again. */
function serverUrl(ctx: BenchContext, database: string, sql: string, params: SqlParams = {}): string {
  const url = new URL(ctx.clickhouseUrl);
  url.searchParams.set('database', database);
  url.searchParams.set('query', sql);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(`param_${name}`, String(value));
  return url.toString();
}

async function runSql(ctx: BenchContext, database: string, sql: string, params: SqlParams = {}): Promise<{ text: string; readRows: number }> {
  const res = await fetch(serverUrl(ctx, database, sql, params), { method: 'POST' });
  const text = await res.text();
  if (!res.ok) throw new Error(`ClickHouse answered ${res.status}: ${text.slice(0, 500)}`);
  const summary = JSON.parse(res.headers.get('x-clickhouse-summary') ?? '{}') as { read_rows?: string };
  return { text, readRows: Number(summary.read_rows ?? NaN) };
}

/** Adds `count` events to one project, spread over 1,000 devices, 8 fleets and 4 domains, one millisecond apart. */
async function load(ctx: BenchContext, database: string, orgId: string, projectId: string, from: number, count: number): Promise<void> {
  const sql = `INSERT INTO events (org_id, project_id, occurred_at, id, domain, entity, action, device_id, fleet_id, payload, source_service)
    SELECT {org:UUID}, {project:UUID}, addMilliseconds(toDateTime64('${START}', 6, 'UTC'), number),
      generateUUIDv4(number), ['telemetry', 'devices', 'edge', 'ota'][number % 4 + 1], 'reading', 'recorded',
      toUUID(concat('00000000-0000-4000-8000-', leftPad(toString(number % 1000), 12, '0'))),
      toUUID(concat('00000000-0000-4000-9000-', leftPad(toString(number % 8), 12, '0'))),
      concat('{"seq":', toString(number), ',"temperature":', toString(20 + number % 10), '}'), 'bench'
    FROM numbers({from:UInt64}, {count:UInt64})`;
  await runSql(ctx, database, sql, { org: orgId, project: projectId, from, count });
  // A settled table, as a production one mostly is: the figures should not ride on background merges.
  await runSql(ctx, database, 'OPTIMIZE TABLE events FINAL');
}

/**
 * The feed on the ClickHouse server with 1M and then 10M events in one project, 50
 * connections: the first page, a page deep in by cursor, and each filter; against the
 * same server answering SELECT 1 and the same SQL sent to it directly, in this run. Rows
 * read per page are the server's X-ClickHouse-Summary for that SQL. Every connection asks
 * for the same page, so overlapping requests share one query; the last row asks for 500
 * different pages in turn, so that none do.
 */
export async function measureFeed(ctx: BenchContext, sizes: readonly number[]): Promise<Row[]> {
  const { gateway } = await startKafkaGateway(ctx, 'feed');
  const database = `bench_feed_${ctx.run}`;
  const orgId = randomUUID();
  const projectId = randomUUID();
  const headers = await callerHeaders(ctx.secret, orgId);
  const feedUrl = (query: Record<string, string>) => `${gateway.url}/core/api/v1/projects/${projectId}/events?${new URLSearchParams(query).toString()}`;
  const rows: Row[] = [];
  try {
    let loaded = 0;
    for (const size of sizes) {
      await load(ctx, database, orgId, projectId, loaded, size - loaded);
      loaded = size;
      const label = `${(size / 1e6).toLocaleString('en-US')}M events`;
      const select1 = await autocannon({ url: serverUrl(ctx, database, 'SELECT 1'), connections: CONNECTIONS, seconds: ctx.seconds });
      rows.push({ scenario: `feed, ${label}`, measure: 'server: SELECT 1', value: select1.perSecond, unit: 'req/s', ...latencies(select1) });

      // Deep in: the page that starts at 80% of the project's history, and the cursor it hands out.
      const deepUntil = new Date(Date.parse(`${START.replace(' ', 'T')}Z`) + Math.floor(size * 0.2)).toISOString();
      const deepFirst = (await (await fetch(feedUrl({ until: deepUntil, limit: String(PAGE) }), { headers })).json()) as CanonicalEventPageResponse;
      const last = deepFirst.data.items.at(-1);
      if (last === undefined || deepFirst.meta.next_cursor === null) throw new Error('the deep page came back empty');
      const shapes: (Shape & { after?: FeedQuery['after'] })[] = [
        { name: 'first page', query: {}, filters: {} },
        {
          name: 'page deep in, by cursor',
          query: { until: deepUntil, cursor: deepFirst.meta.next_cursor },
          filters: { until: toStoreTimestamp(deepUntil) },
          after: { occurredAt: toStoreTimestamp(last.occurred_at), id: last.id },
        },
        { name: 'domain filter', query: { domain: 'edge' }, filters: { domain: 'edge' } },
        { name: 'device_id filter', query: { device_id: device(7) }, filters: { deviceId: device(7) } },
        { name: 'fleet_id filter', query: { fleet_id: fleet(3) }, filters: { fleetId: fleet(3) } },
      ];
      for (const shape of shapes) {
        const { sql, params } = feedSql({ orgId, projectId, filters: shape.filters, after: shape.after, limit: PAGE + 1 });
        const { readRows } = await runSql(ctx, database, sql, params);
        const direct = await autocannon({ url: serverUrl(ctx, database, sql, params), connections: CONNECTIONS, seconds: ctx.seconds });
        const viaGateway = await autocannon({ url: feedUrl({ limit: String(PAGE), ...shape.query }), headers, connections: CONNECTIONS, seconds: ctx.seconds });
        rows.push({ scenario: `feed, ${label}`, measure: `server: the ${shape.name} SQL sent directly`, value: direct.perSecond, unit: 'req/s', ...latencies(direct), baseline: { name: 'SELECT 1', value: select1.perSecond } });
        rows.push({
          scenario: `feed, ${label}`,
          measure: `gateway: ${shape.name}`,
          value: viaGateway.perSecond,
          unit: 'pages/s',
          ...latencies(viaGateway),
          baseline: { name: 'SELECT 1', value: select1.perSecond },
          target: '≥ 0.5 of SELECT 1, p99 ≤ 2× its p99',
          note: `${readRows.toLocaleString('en-US')} rows read per page`,
        });
      }
      // Every row above sends one URL from all 50 connections, so overlapping requests share
      // one store query (src/feed/shared-reads.ts). Here each request asks for a different
      // page near the head of the feed, so every request costs a query of its own.
      const end = Date.parse(`${START.replace(' ', 'T')}Z`) + size;
      const distinct = Array.from({ length: DISTINCT_PAGES }, (_, k) => feedUrl({ limit: String(PAGE), until: new Date(end - k * 997).toISOString() }));
      const unshared = await variedAutocannon({ urls: distinct, headers, connections: CONNECTIONS, seconds: ctx.seconds });
      rows.push({
        scenario: `feed, ${label}`,
        measure: `gateway: ${DISTINCT_PAGES} different pages near the head, none shared`,
        value: unshared.perSecond,
        unit: 'pages/s',
        ...latencies(unshared),
        baseline: { name: 'SELECT 1', value: select1.perSecond },
        target: '≥ 0.5 of SELECT 1, p99 ≤ 2× its p99',
      });
    }
    return rows;
  } finally {
    await gateway.stop();
  }
}
