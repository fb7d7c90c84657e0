/**
 * The feed at a telemetry deployment's size (issue 34): events over 1,000 projects in 100
 * organizations and 24 months, written as ingestion writes them (time order, one insert per
 * ingest batch, every project in every batch, no OPTIMIZE; past months left as one part
 * each, as the tables' own merging of a day-old month leaves them, and the history topped
 * up to now), then 32 connections, each request a different project and page, for every
 * page shape, against the same server answering SELECT 1 in the same run. Rows read and
 * queries per page are the server's own counters (system.events), over a sample of pages
 * read one at a time and over the load.
 */
import { waitFor } from '../../test/support/wait-for.js';
import { mergesSettled, runSql, serverCounters, serverQuiet as quiet } from '../support/server-sql.js';
import { firstPageCounts, gatewayMetrics } from '../support/gateway-metrics.js';
import { askEach } from '../support/ask-each.js';
import { autocannon, variedAutocannon } from '../support/autocannon.js';
import { gatewayProcess, serverGatewayEnvironment } from '../support/bench-process.js';
import { withCpu } from '../support/cpu-usage.js';
import type { BenchContext } from '../support/context.js';
import { signHs256Token } from '../../src/auth/sign-token.js';
import { permissions } from '../../src/auth/principal.js';
import type { Row } from '../support/results.js';
import { latencies } from './ceiling.js';
import { DEVICES_PER_PROJECT, device, eventAt, fleet, historySpan, org, ORGS, project, PROJECTS, writeAgedHistory, writeEvents, type HistoryShape, type HistorySpan } from '../support/history.js';
import { DEVICE_EVENTS_TABLE, DEVICE_SPANS_TABLE } from '../../src/store/device-events.js';
import type { FeedQuery } from '../../src/store/event-store.js';
import { feedSql } from '../../src/store/feed-sql.js';
import { toStoreTimestamp } from '../../src/store/timestamps.js';
import { commandTopicEnvironment, commandTopicNames } from '../../test/support/command-topics.js';

const CONNECTIONS = 32;
const FLEETS_PER_PROJECT = 10;
/** Projects 0–9 stop a year before the end: their events go to projects 10–19 from then on. */
const IDLE_PROJECTS = 10;
const SHAPE: HistoryShape = { fleetsPerProject: FLEETS_PER_PROJECT, idleProjects: IDLE_PROJECTS };
const PAGE = 50;
/** Pages per shape read one at a time for the server's counters. */
const SAMPLE = 40;
const HOUR = 3_600_000;

/**
 * The events from the history's end up to now, at its rate, in one insert, so that a
 * project's newest event is as recent as an active deployment's when pages are read, not
 * as old as the writing and merging took.
 */
async function writeUpToNow(url: string, database: string, total: number, batch: number, span: HistorySpan): Promise<number> {
  const to = eventAt(Date.now(), total, span);
  await writeEvents(url, database, SHAPE, { from: total, to }, total, Math.max(batch, to - total), span);
  return to - total;
}

/** The tables a page may read: the events table, and the device table and its spans that their views fill (docs/decisions/device-pages.md). */
const PAGE_TABLES = ['events', DEVICE_EVENTS_TABLE, DEVICE_SPANS_TABLE];

/** Bytes on disk per event of each table pages read, as the parts are once merges settled: what the device table costs in space. */
async function storage(url: string, database: string, label: string, events: number): Promise<Row[]> {
  const text = await runSql(url, database, `SELECT table, sum(bytes_on_disk) AS bytes, sum(rows) AS rows, count() AS parts FROM system.parts WHERE database = currentDatabase() AND active AND table IN (${PAGE_TABLES.map((t) => `'${t}'`).join(', ')}) GROUP BY table ORDER BY table FORMAT JSONEachRow`);
  const tables = text.trim().split('\n').map((line) => JSON.parse(line) as { table: string; bytes: string; rows: string; parts: string });
  const eventsTable = tables.find((t) => t.table === 'events');
  return tables.map((t) => ({
    scenario: label,
    measure: `store: bytes on disk per event, ${t.table}`,
    value: Number((Number(t.bytes) / events).toFixed(1)),
    unit: 'bytes',
    ...(t.table === 'events' || eventsTable === undefined ? {} : { baseline: { name: 'events', value: Number((Number(eventsTable.bytes) / events).toFixed(1)) } }),
    note: `${Number(t.rows).toLocaleString('en-US')} rows in ${t.parts} active parts`,
  }));
}

/** Queries the server has refused for their size since it started (too many rows or bytes, the query's memory): batches of page reads over their bound (src/store/batched-page-reads.ts). */
async function refusedBatches(url: string): Promise<number> {
  return Number((await runSql(url, 'system', 'SELECT sum(value) FROM system.errors WHERE code IN (158, 241, 307)')).trim());
}

interface Request {
  readonly url: string;
  readonly orgId: string;
  /** The page's position in the feed, for a page by cursor: where the page before it ended, in store text. */
  readonly after?: { readonly occurredAt: string; readonly id: string };
}

/** A gateway (ROLE=gateway) on the run's server and the scenario's database, with command topics named after `name`. */
async function scaleGateway(ctx: BenchContext, database: string, name: string, env: Readonly<Record<string, string>> = {}) {
  return gatewayProcess({
    ROLE: 'gateway',
    ...(await serverGatewayEnvironment(ctx, database)),
    ...commandTopicEnvironment(commandTopicNames((topic) => `bench.scale.${name}.${topic}.${ctx.run}`)),
    ...env,
  });
}

/**
 * Until `signal` aborts, every 100 ms one event (occurred now) into each of
 * `projectsPerSecond / 10` active projects taken in turn, as another process's ingestion:
 * the gateway learns of these writes only through its watch of the store.
 */
async function writeWhile(url: string, database: string, projectsPerSecond: number, signal: AbortSignal): Promise<number> {
  const perTick = Math.max(1, Math.round(projectsPerSecond / 10));
  let next = 2 * IDLE_PROJECTS;
  let written = 0;
  for (let tick = performance.now(); !signal.aborted; tick += 100) {
    const projects = Array.from({ length: perTick }, () => {
      const p = next;
      next = next + 1 >= PROJECTS ? 2 * IDLE_PROJECTS : next + 1;
      return p;
    });
    const values = projects.map((p) => `(toUUID('${org(p)}'), toUUID('${project(p)}'), now64(6), generateUUIDv4(), 'telemetry', 'reading', 'recorded', NULL, NULL, '{"live":true}', 'bench')`);
    await runSql(url, database, `INSERT INTO events (org_id, project_id, occurred_at, id, domain, entity, action, device_id, fleet_id, payload, source_service) VALUES ${values.join(', ')}`);
    written += projects.length;
    // Ticks are counted from the start, so the time the inserts take does not lower the rate.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, tick + 100 - performance.now())));
  }
  return written;
}

/** One page shape: a request per project (and page), taken in turn. */
interface Shape {
  readonly name: string;
  readonly requests: readonly Request[];
}

/**
 * The shapes of the issue a gateway may keep (every page without a cursor, each request a
 * different project and page): first pages, pages deep in (`until` somewhere in the
 * history), the device_id, fleet_id and domain filters, a filter that matches nothing,
 * projects idle for a year, and projects with no event at all.
 */
function pagesWithoutCursor(gatewayUrl: string, span: { startMs: number; endMs: number }): Shape[] {
  const feed = page(gatewayUrl);
  const active = activeProjects();
  // A fixed scatter of instants over the history (golden-ratio steps), one per project.
  const deep = (k: number) => new Date(span.startMs + ((k * 0.6180339887) % 1) * (span.endMs - span.startMs)).toISOString();
  return [
    { name: 'first page of a project', requests: active.map((p) => feed(p, {})) },
    { name: 'page deep in (until)', requests: active.map((p, k) => feed(p, { until: deep(k) })) },
    { name: 'device_id filter', requests: active.map((p, k) => feed(p, { device_id: device(p, k % DEVICES_PER_PROJECT) })) },
    { name: 'fleet_id filter', requests: active.map((p, k) => feed(p, { fleet_id: fleet(p, k % FLEETS_PER_PROJECT) })) },
    { name: 'domain filter', requests: active.map((p, k) => feed(p, { domain: ['telemetry', 'devices', 'edge', 'ota'][k % 4]! })) },
    { name: 'a filter that matches nothing', requests: active.map((p) => feed(p, { action: 'never-recorded' })) },
    { name: 'first page of a project idle for a year', requests: Array.from({ length: IDLE_PROJECTS }, (_, p) => feed(p, {})) },
    // Project ids past the generated ones: a new project, with no event at all.
    { name: 'first page of an empty project', requests: Array.from({ length: 300 }, (_, k) => feed(PROJECTS + k, {})) },
  ];
}

/** Second pages, by the cursor each of 300 active projects' first page gives. */
async function secondPages(gatewayUrl: string, headers: (orgId: string) => Record<string, string>): Promise<Shape> {
  const feed = page(gatewayUrl);
  const requests: Request[] = [];
  for (const p of activeProjects().slice(0, 300)) {
    const first = feed(p, {});
    const res = await fetch(first.url, { headers: headers(first.orgId) });
    const body = (await res.json()) as PageBody;
    const last = body.data.items.at(-1);
    if (body.meta.next_cursor === null || last === undefined) throw new Error(`project ${p} has one page only`);
    requests.push({ ...feed(p, { cursor: body.meta.next_cursor }), after: { occurredAt: toStoreTimestamp(last.occurred_at), id: last.id } });
  }
  return { name: 'second page by cursor', requests };
}

const activeProjects = () => Array.from({ length: PROJECTS - 2 * IDLE_PROJECTS }, (_, k) => k + 2 * IDLE_PROJECTS);

const page =
  (gatewayUrl: string) =>
  (p: number, query: Record<string, string>): Request => ({
    url: `${gatewayUrl}/core/api/v1/projects/${project(p)}/events?${new URLSearchParams({ limit: String(PAGE), ...query }).toString()}`,
    orgId: org(p),
  });

/** What the bench reads of a page's answer. */
interface PageBody {
  readonly data: { readonly items: readonly { readonly id: string; readonly occurred_at: string }[] };
  readonly meta: { readonly next_cursor: string | null };
}

/** The store's query of the page `request` asks for (its project, filters and cursor), as the feed would read it. */
function pageQuery(request: Request): FeedQuery {
  const url = new URL(request.url);
  const at = (name: string) => url.searchParams.get(name) ?? undefined;
  const until = at('until');
  return {
    orgId: request.orgId,
    projectId: url.pathname.split('/').at(-2)!,
    filters: { domain: at('domain'), entity: at('entity'), action: at('action'), deviceId: at('device_id'), fleetId: at('fleet_id'), until: until === undefined ? undefined : toStoreTimestamp(until) },
    after: request.after,
    limit: PAGE + 1,
  };
}

/**
 * The floor of each of `requests`: the narrowest single SQL that answers its page, sent to
 * the server itself. It is the page's own SQL (src/store/feed-sql.ts, the limit the feed
 * asks, one past the page) in the one window that reaches from the top down to the page's
 * oldest event, as the gateway answered it just before: no query can return the page and
 * read less. A page that holds nothing has no window: its plain SQL.
 */
async function floorUrls(ctx: BenchContext, database: string, requests: readonly Request[], headers: (orgId: string) => Record<string, string>): Promise<string[]> {
  const urls: string[] = new Array<string>(requests.length);
  let next = 0;
  const asker = async () => {
    for (let k = next++; k < requests.length; k = next++) {
      const request = requests[k]!;
      const res = await fetch(request.url, { headers: headers(request.orgId) });
      if (res.status !== 200) throw new Error(`${request.url}: ${res.status} ${await res.text()}`);
      const oldest = ((await res.json()) as PageBody).data.items.at(-1);
      const { sql, params } = feedSql(pageQuery(request), oldest === undefined ? {} : { from: toStoreTimestamp(oldest.occurred_at) });
      const url = new URL(ctx.clickhouseUrl);
      url.searchParams.set('database', database);
      url.searchParams.set('query', sql);
      for (const [name, value] of Object.entries(params)) url.searchParams.set(`param_${name}`, String(value));
      urls[k] = url.toString();
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, asker));
  return urls;
}

/**
 * `requests` in a fixed order that neither the asking before a load nor the writer
 * follows: in their own order, the load would meet the pages asked longest before first,
 * and those the writer has just written. Steps of √2, not of the golden ratio the `until`
 * instants take, which would sort those pages by their instant.
 */
const scattered = (requests: readonly Request[]): Request[] =>
  requests
    .map((r, k) => ({ r, at: (k * Math.SQRT2) % 1 }))
    .sort((a, b) => a.at - b.at)
    .map(({ r }) => r);

/** What the issue asks of a shape: first pages of active projects are most requests. */
const targetOf = (shape: string) => (shape === 'first page of a project' ? '≥ 0.5 of SELECT 1, p99 ≤ 250 ms' : '≥ 0.25 of SELECT 1, p99 ≤ 250 ms');

/** What issue 52 asks of every page read from the store, against SELECT 1 and against the page's own SQL. */
const STORE_TARGET = '≥ 0.15 of SELECT 1, p99 ≤ 400 ms';
const FLOOR_TARGET = '≥ 0.8';

/**
 * Every page without a cursor as dashboards poll it, on a gateway that keeps such pages
 * (FEED_FIRST_PAGE_MAX_AGE_MS of a minute: pages kept until its watch sees their project
 * written, docs/decisions/feed-first-page-cache.md), and the second pages by the
 * cursors their first pages give, each shape's pages asked once
 * before, then loaded in an order the asking did not follow: with the table as it is, and
 * while another process writes a tenth of the active projects each second (never the idle
 * or empty ones, whose rows with writes show what the writes and the watch cost pages
 * they do not touch). Where each page came from, and how often the watch lost track of
 * the store, are the gateway's own counts (feed_first_pages_total,
 * feed_first_pages_lost_track_total).
 */
async function keptPages(ctx: BenchContext, database: string, span: { startMs: number; endMs: number }, headers: (orgId: string) => Record<string, string>, label: string, select1: number): Promise<Row[]> {
  const polled = await scaleGateway(ctx, database, 'polled', { FEED_FIRST_PAGE_MAX_AGE_MS: '60000' });
  try {
    await waitFor("the polled gateway to follow the store's writes", async () => ((await gatewayMetrics(polled.url))('feed_first_pages_watched') === 1 ? true : undefined));
    const rows: Row[] = [];
    // Every shape with nothing written before any with writes: the watch learns of a write
    // seconds after it, so a load just after one with writes would still see its drops.
    for (const writtenPerSecond of [0, PROJECTS / 10]) {
      for (const shape of pagesWithoutCursor(polled.url, span)) rows.push(await pollShape(ctx, polled, database, shape, writtenPerSecond, headers, label, select1));
      // By the cursors their first pages, asked just now, gave out: the page after a kept
      // first page is cut from it, where the writes leave it there.
      rows.push(await pollShape(ctx, polled, database, await secondPages(polled.url, headers), writtenPerSecond, headers, label, select1));
    }
    return rows;
  } finally {
    await polled.stop();
  }
}

async function pollShape(
  ctx: BenchContext,
  polled: { url: string; pid: number },
  database: string,
  shape: Shape,
  writtenPerSecond: number,
  headers: (orgId: string) => Record<string, string>,
  label: string,
  select1: number,
): Promise<Row> {
  // Asked once just before, CONNECTIONS at a time, as dashboards already polling have. The
  // gateway holds at most 1,000 pages, so the last shape's pages make way for these. A page
  // served from memory keeps its store read's age: one read more than a minute before the
  // load meets it (the slowest shapes take longer than that to ask) is read again, and
  // counted so.
  const lostBefore = (await firstPageCounts(polled.url)).lostTrack;
  const asking = performance.now();
  await askEach(shape.requests, headers, CONNECTIONS);
  const asked = (performance.now() - asking) / 1000;
  await quiet(ctx.clickhouseUrl, database);
  const writes = new AbortController();
  const writing = writtenPerSecond === 0 ? Promise.resolve(0) : writeWhile(ctx.clickhouseUrl, database, writtenPerSecond, writes.signal);
  const before = await firstPageCounts(polled.url);
  const order = scattered(shape.requests);
  const [load, cpu] = await withCpu(polled.pid, () =>
    variedAutocannon({ urls: order.map((r) => r.url), orgIds: order.map((r) => r.orgId), headers: headers(org(0)), connections: CONNECTIONS, seconds: ctx.seconds }),
  ).finally(() => writes.abort());
  const written = await writing;
  const after = await firstPageCounts(polled.url);
  const memory = after.memory - before.memory;
  const store = after.store - before.store;
  // Each time the watch lost track, no kept page was served until a poll ended well and on
  // time (first-page-watch.ts).
  const times = (n: number) => `${n} time${n === 1 ? '' : 's'}`;
  const lost = `the watch lost track ${times(before.lostTrack - lostBefore)} while they were asked and ${times(after.lostTrack - before.lostTrack)} under load`;
  const refreshed = after.refreshed - before.refreshed;
  const merged = after.merged - before.merged;
  return {
    scenario: label,
    measure: `gateway: ${shape.name}, kept, as dashboards poll it, ${writtenPerSecond === 0 ? 'no project written meanwhile' : `${writtenPerSecond} projects written a second by another process`}`,
    value: load.perSecond,
    unit: 'pages/s',
    ...latencies(load),
    baseline: { name: 'SELECT 1', value: select1 },
    target: targetOf(shape.name),
    note: `${Math.round((100 * memory) / Math.max(1, memory + store))}% of page reads answered from memory (${memory} from memory, ${store} from the store, ${merged} times a kept page was brought up to date in memory, ${refreshed} pages read again when a write dropped them or ahead of their expiry), the ${shape.requests.length} pages asked once in ${asked.toFixed(0)} s before, ${lost}${written > 0 ? `, ${written} events written meanwhile (${Math.round(written / ctx.seconds)} a second)` : ''}; ${load.requests} pages; gateway ${cpu.processCores.toFixed(2)} cores, load generator ${(load.generatorCores ?? NaN).toFixed(2)} of a core, machine ${Math.round(cpu.machineBusy * 100)}% busy`,
  };
}

/**
 * `sizes` in events; `batch`: events per insert, as the ingest consumer's batch. Each size
 * gets a database of its own, dropped at the end.
 */
export async function measureFeedAtScale(ctx: BenchContext, sizes: readonly number[], batch: number): Promise<Row[]> {
  const rows: Row[] = [];
  const orgIds = Array.from({ length: ORGS }, (_, o) => org(o));
  const token = await signHs256Token(ctx.secret, { sub: 'bench', orgIds, scopes: permissions, ttlSeconds: 8 * 3600 });
  const headers = (orgId: string) => ({ authorization: `Bearer ${token}`, 'org-id': orgId });
  const firstPages: Record<string, number> = {};
  for (const size of sizes) {
    const label = `feed at scale, ${size.toLocaleString('en-US')} events`;
    const database = `bench_feed_scale_${size}_${ctx.run}`;
    // Every page a store read: kept first pages, on by default, are measured on a gateway of their own below.
    const gateway = await scaleGateway(ctx, database, 'pages', { FEED_FIRST_PAGE_MAX_AGE_MS: '0' });
    let select1: Awaited<ReturnType<typeof autocannon>>;
    try {
      // The history ends at the run's start, so "now" (the gateway's clock) is just past the newest events, as in production.
      const span = historySpan(Math.floor(Date.now() / HOUR) * HOUR);
      const writing = Date.now();
      await writeAgedHistory(ctx.clickhouseUrl, database, SHAPE, size, batch, span);
      const written = (Date.now() - writing) / 1000;
      const parts = await mergesSettled(ctx.clickhouseUrl, database, PAGE_TABLES);
      const partitions = Number((await runSql(ctx.clickhouseUrl, database, `SELECT uniqExact(partition) FROM system.parts WHERE database = currentDatabase() AND table = 'events' AND active`)).trim());
      console.error(`  feed-scale: ${size} events written in ${written.toFixed(0)} s (${Math.round(size / written)} rows/s), ${parts} active parts in ${partitions} partitions once merges settled`);
      select1 = await autocannon({ url: `${ctx.clickhouseUrl}/?query=${encodeURIComponent('SELECT 1')}`, connections: CONNECTIONS, seconds: ctx.seconds });
      rows.push({ scenario: label, measure: 'server: SELECT 1, 32 connections', value: select1.perSecond, unit: 'req/s', ...latencies(select1), note: `${parts} active parts, ${partitions} partitions, no OPTIMIZE` });
      rows.push(...(await storage(ctx.clickhouseUrl, database, label, size)));
      const upToNow = await writeUpToNow(ctx.clickhouseUrl, database, size, batch, span);
      console.error(`  feed-scale: ${upToNow} events written from the history's end up to now`);
      for (const shape of [...pagesWithoutCursor(gateway.url, span), await secondPages(gateway.url, headers)]) {
        // The last load's pages still in flight when it ended would count in this shape's figures.
        await quiet(ctx.clickhouseUrl, database);
        const before = await serverCounters(ctx.clickhouseUrl);
        const sample = shape.requests.slice(0, SAMPLE);
        const sampling = performance.now();
        await askEach(sample, headers, 1);
        const alone = (performance.now() - sampling) / sample.length;
        const after = await serverCounters(ctx.clickhouseUrl);
        // Counting reads those counters once more: a SELECT of its own, a row per event name.
        const perPage = { rows: Math.round((after.rows - before.rows - 2) / sample.length), queries: (after.queries - before.queries - 1) / sample.length };
        const refusedBefore = await refusedBatches(ctx.clickhouseUrl);
        const loadBefore = await serverCounters(ctx.clickhouseUrl);
        const [load, cpu] = await withCpu(gateway.pid, () =>
          variedAutocannon({ urls: shape.requests.map((r) => r.url), orgIds: shape.requests.map((r) => r.orgId), headers: headers(org(0)), connections: CONNECTIONS, seconds: ctx.seconds }),
        );
        const loadAfter = await serverCounters(ctx.clickhouseUrl);
        // Under load reads of different projects go together (docs/decisions/feed-batched-page-reads.md), so a page costs the server less than alone.
        const underLoad = { rows: Math.round((loadAfter.rows - loadBefore.rows) / Math.max(1, load.requests)), queries: (loadAfter.queries - loadBefore.queries - 1) / Math.max(1, load.requests) };
        const refused = (await refusedBatches(ctx.clickhouseUrl)) - refusedBefore;
        if (shape.name === 'first page of a project') firstPages[String(size)] = load.perSecond;
        rows.push({
          scenario: label,
          measure: `gateway: ${shape.name}`,
          value: load.perSecond,
          unit: 'pages/s',
          ...latencies(load),
          baseline: { name: 'SELECT 1', value: select1.perSecond },
          target: STORE_TARGET,
          note: `${perPage.rows.toLocaleString('en-US')} rows read and ${perPage.queries.toFixed(1)} queries per page, ${alone.toFixed(1)} ms a page alone; under load ${underLoad.rows.toLocaleString('en-US')} rows read and ${underLoad.queries.toFixed(2)} queries per page; ${load.requests} pages, ${refused} batches refused; gateway ${cpu.processCores.toFixed(2)} cores, load generator ${(load.generatorCores ?? NaN).toFixed(2)} of a core, machine ${Math.round(cpu.machineBusy * 100)}% busy`,
        });
        // The engine's own floor for these pages, at the same concurrency, just after.
        const floors = await floorUrls(ctx, database, shape.requests, headers);
        await quiet(ctx.clickhouseUrl, database);
        const floor = await variedAutocannon({ urls: floors, connections: CONNECTIONS, seconds: ctx.seconds });
        rows.push({
          scenario: label,
          measure: `server: ${shape.name}, each page's own SQL in its narrowest window`,
          value: floor.perSecond,
          unit: 'queries/s',
          ...latencies(floor),
          baseline: { name: 'SELECT 1', value: select1.perSecond },
          note: `${floor.requests} queries, ${floor.errors + floor.non2xx} failed; load generator ${(floor.generatorCores ?? NaN).toFixed(2)} of a core`,
        });
        rows.push({
          scenario: label,
          measure: `gateway: ${shape.name}, against its pages' own SQL`,
          value: load.perSecond,
          unit: 'pages/s',
          baseline: { name: "the pages' own SQL", value: floor.perSecond },
          target: FLOOR_TARGET,
        });
      }
      rows.push(...(await keptPages(ctx, database, span, headers, label, select1.perSecond)));
    } finally {
      await gateway.stop();
      await runSql(ctx.clickhouseUrl, 'default', `DROP DATABASE IF EXISTS ${database} SYNC`).catch(() => undefined);
    }
  }
  const small = Math.min(...sizes);
  const large = Math.max(...sizes);
  if (small !== large && firstPages[String(small)] !== undefined && firstPages[String(large)] !== undefined) {
    rows.push({
      scenario: 'feed at scale',
      measure: `gateway: first pages/s at ${large.toLocaleString('en-US')} events against ${small.toLocaleString('en-US')}`,
      value: firstPages[String(large)]!,
      unit: 'pages/s',
      baseline: { name: `${small.toLocaleString('en-US')} events`, value: firstPages[String(small)]! },
      target: '≥ 0.8',
    });
  }
  return rows;
}
