/**
 * What retention costs at a deployment's size (issue 54, item 1): a history of 24 months on
 * the ClickHouse server, merged as production leaves it, and the retention job
 * (src/store/retention.ts) dropping its oldest year in two steps: the months past 18 × 30
 * days (seven calendar months, as the month boundaries fall) with nothing else running, for
 * its own time and the server's CPU, then those past 12 × 30 days while 32 connections
 * read first pages and device pages through a gateway, for what it does to reads. The same
 * pages are read before the drops and after them, with the server's own count of queries
 * and rows per page, since the spans still reach over the dropped months
 * (docs/decisions/retention.md).
 */
import { Registry } from 'prom-client';
import { permissions } from '../../src/auth/principal.js';
import { signHs256Token } from '../../src/auth/sign-token.js';
import { createLogger } from '../../src/observability/logger.js';
import { createClickHouseServerTransport } from '../../src/store/clickhouse-server-transport.js';
import { parseClickHouse } from '../../src/store/clickhouse-settings.js';
import { DEVICE_SPANS_TABLE } from '../../src/store/device-events.js';
import { createRetention, RETENTION_TABLES, type RetentionRun } from '../../src/store/retention.js';
import { commandTopicEnvironment, commandTopicNames } from '../../test/support/command-topics.js';
import { askEach, type PageRequest } from '../support/ask-each.js';
import { autocannon, variedAutocannon, type LoadRun } from '../support/autocannon.js';
import { gatewayProcess, serverGatewayEnvironment } from '../support/bench-process.js';
import type { BenchContext } from '../support/context.js';
import { withCpu } from '../support/cpu-usage.js';
import { writeHistory } from '../support/dashboard-store.js';
import { device, DEVICES_PER_PROJECT, org, ORGS, project, PROJECTS } from '../support/history.js';
import { cpuSeconds, listenerPid } from '../support/process-cpu.js';
import type { Row } from '../support/results.js';
import { mergesSettled, runSql, serverCounters, serverQuiet } from '../support/server-sql.js';
import { latencies } from './ceiling.js';

const CONNECTIONS = 32;
const PAGE = 50;
/** Pages read one at a time, before the drops and after them, for the server's counters. */
const SAMPLE = 40;
/** The load starts this long before the second drop, so that the drop meets reads in flight. */
const LEAD_MS = 2000;
const MONTH_MS = 30 * 86_400_000;

/** A project's first page and one of its devices' first pages, for every project: what dashboards and device screens open. */
function pages(gatewayUrl: string): PageRequest[] {
  const at = (p: number, query: Record<string, string>): PageRequest => ({
    url: `${gatewayUrl}/core/api/v1/projects/${project(p)}/events?${new URLSearchParams({ limit: String(PAGE), ...query }).toString()}`,
    orgId: org(p),
  });
  return Array.from({ length: PROJECTS }, (_, p) => [at(p, {}), at(p, { device_id: device(p, p % DEVICES_PER_PROJECT) })]).flat();
}

/** What the tables of events hold: rows, active parts and bytes on disk, every table that retention drops from together with the spans. */
async function footprint(url: string, database: string): Promise<{ events: number; parts: number; bytes: number }> {
  const tables = [...RETENTION_TABLES, DEVICE_SPANS_TABLE].map((t) => `'${t}'`).join(', ');
  const text = await runSql(url, database, `SELECT sumIf(rows, table = 'events') AS events, count() AS parts, sum(bytes_on_disk) AS bytes FROM system.parts WHERE database = currentDatabase() AND active AND table IN (${tables}) FORMAT JSONEachRow`);
  const row = JSON.parse(text) as { events: string; parts: string; bytes: string };
  return { events: Number(row.events), parts: Number(row.parts), bytes: Number(row.bytes) };
}

/** Queries and rows read per page, over SAMPLE pages asked one at a time. */
async function costPerPage(url: string, database: string, requests: readonly PageRequest[], headers: (orgId: string) => Record<string, string>): Promise<string> {
  await serverQuiet(url, database);
  const sample = requests.slice(0, SAMPLE);
  const before = await serverCounters(url);
  await askEach(sample, headers, 1);
  const after = await serverCounters(url);
  // Reading the counters is a SELECT of its own, and two rows.
  const queries = (after.queries - before.queries - 1) / sample.length;
  const rows = Math.round((after.rows - before.rows - 2) / sample.length);
  return `${queries.toFixed(1)} queries and ${rows.toLocaleString('en-US')} rows read per page`;
}

const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(2)} GiB`;
const monthsOf = (run: RetentionRun) => run.dropped.filter((d) => d.startsWith('events/')).length;

export async function measureRetention(ctx: BenchContext, events: number, batch: number): Promise<Row[]> {
  const label = `retention, ${events.toLocaleString('en-US')} events over 24 months`;
  const database = `bench_retention_${ctx.run}`;
  const token = await signHs256Token(ctx.secret, { sub: 'bench', orgIds: Array.from({ length: ORGS }, (_, o) => org(o)), scopes: permissions, ttlSeconds: 8 * 3600 });
  const headers = (orgId: string) => ({ authorization: `Bearer ${token}`, 'org-id': orgId });
  // Kept first pages off: every page is a read of the store, which is what a drop could slow.
  const gateway = await gatewayProcess({
    ROLE: 'gateway',
    ...(await serverGatewayEnvironment(ctx, database)),
    ...commandTopicEnvironment(commandTopicNames((topic) => `bench.retention.${topic}.${ctx.run}`)),
    FEED_FIRST_PAGE_MAX_AGE_MS: '0',
  });
  const clickhouse = parseClickHouse({ CLICKHOUSE_URL: ctx.clickhouseUrl, CLICKHOUSE_DATABASE: database });
  if (clickhouse === undefined) throw new Error('the retention scenario needs the ClickHouse server');
  const transport = await createClickHouseServerTransport(clickhouse);
  // The job as a gateway runs it, with no setting (its start drops nothing) and no timer: the bench asks for each drop.
  const retention = await createRetention({ transport, layout: { kind: 'single' }, settings: { days: undefined }, clickhouse, registry: new Registry(), logger: createLogger('warn'), everyMs: 0 });
  const server = listenerPid(Number(new URL(ctx.clickhouseUrl).port));
  const rows: Row[] = [];
  try {
    const writing = performance.now();
    await writeHistory(ctx.clickhouseUrl, database, events, batch);
    const written = (performance.now() - writing) / 1000;
    await mergesSettled(ctx.clickhouseUrl, database, [...RETENTION_TABLES, DEVICE_SPANS_TABLE]);
    const full = await footprint(ctx.clickhouseUrl, database);
    console.error(`  retention: ${events} events written in ${written.toFixed(0)} s; ${full.parts} active parts, ${gib(full.bytes)} once merges settled`);

    const select1 = await autocannon({ url: `${ctx.clickhouseUrl}/?query=${encodeURIComponent('SELECT 1')}`, connections: CONNECTIONS, seconds: ctx.seconds });
    rows.push({ scenario: label, measure: `server: SELECT 1, ${CONNECTIONS} connections`, value: select1.perSecond, unit: 'req/s', ...latencies(select1) });

    const requests = pages(gateway.url);
    const load = (): Promise<[LoadRun, { processCores: number; machineBusy: number }]> =>
      withCpu(gateway.pid, () => variedAutocannon({ urls: requests.map((r) => r.url), orgIds: requests.map((r) => r.orgId), headers: headers(org(0)), connections: CONNECTIONS, seconds: ctx.seconds }));
    const loadNote = (run: LoadRun, cpu: { processCores: number; machineBusy: number }) =>
      `slowest ${run.maxMs} ms; ${run.requests} pages; gateway ${cpu.processCores.toFixed(2)} cores, load generator ${(run.generatorCores ?? NaN).toFixed(2)} of a core, machine ${Math.round(cpu.machineBusy * 100)}% busy`;

    // Every page once before any load, so that the first load does not pay alone for the
    // server's cold caches and the page cache, and the later ones look faster for it.
    await askEach(requests, headers, CONNECTIONS);
    const costBefore = await costPerPage(ctx.clickhouseUrl, database, requests, headers);
    await serverQuiet(ctx.clickhouseUrl, database);
    const [before, beforeCpu] = await load();
    rows.push({
      scenario: label,
      measure: `gateway: first pages and device pages, ${CONNECTIONS} connections, before retention`,
      value: before.perSecond,
      unit: 'pages/s',
      ...latencies(before),
      baseline: { name: 'SELECT 1', value: select1.perSecond },
      note: `${costBefore}; ${loadNote(before, beforeCpu)}`,
    });

    // The newest event is a minute old: months wholly older than 18 and then 12 months go.
    const newest = Date.now();
    const firstCutoff = new Date(newest - 18 * MONTH_MS);
    const secondCutoff = new Date(newest - 12 * MONTH_MS);

    await serverQuiet(ctx.clickhouseUrl, database);
    const cpuBefore = cpuSeconds(server);
    const dropping = performance.now();
    const alone = await retention.dropBefore(firstCutoff);
    const aloneSeconds = (performance.now() - dropping) / 1000;
    const aloneCpu = cpuSeconds(server) - cpuBefore;
    const afterFirst = await footprint(ctx.clickhouseUrl, database);
    rows.push({
      scenario: label,
      measure: 'retention: the oldest months dropped, nothing else running',
      value: Number(aloneSeconds.toFixed(3)),
      unit: 's',
      note: `${monthsOf(alone)} months of ${RETENTION_TABLES.join(' and ')} (${alone.dropped.length} partitions), ${(full.events - afterFirst.events).toLocaleString('en-US')} events; server CPU ${aloneCpu.toFixed(2)} s; parts ${full.parts} → ${afterFirst.parts}, ${gib(full.bytes)} → ${gib(afterFirst.bytes)} on disk`,
    });

    await serverQuiet(ctx.clickhouseUrl, database);
    const reading = load();
    await new Promise((resolve) => setTimeout(resolve, LEAD_MS));
    const underCpuBefore = cpuSeconds(server);
    const dropping2 = performance.now();
    const under = await retention.dropBefore(secondCutoff);
    const underSeconds = (performance.now() - dropping2) / 1000;
    const underCpu = cpuSeconds(server) - underCpuBefore;
    const [during, duringCpu] = await reading;
    const afterSecond = await footprint(ctx.clickhouseUrl, database);
    rows.push({
      scenario: label,
      measure: `retention: the next months dropped, under ${CONNECTIONS} connections of page reads`,
      value: Number(underSeconds.toFixed(3)),
      unit: 's',
      baseline: { name: 'the drop with nothing else running', value: Number(aloneSeconds.toFixed(3)) },
      note: `${monthsOf(under)} months (${under.dropped.length} partitions), ${(afterFirst.events - afterSecond.events).toLocaleString('en-US')} events; server CPU ${underCpu.toFixed(2)} s over the drop, the page reads' included; parts ${afterFirst.parts} → ${afterSecond.parts}, ${gib(afterSecond.bytes)} on disk after`,
    });
    rows.push({
      scenario: label,
      measure: `gateway: the same pages while the drop ran, from ${LEAD_MS / 1000} s into the load for ${underSeconds.toFixed(2)} s`,
      value: during.perSecond,
      unit: 'pages/s',
      ...latencies(during),
      baseline: { name: 'the same pages before retention', value: before.perSecond },
      target: '≥ 0.8 of before (reads not slowed)',
      note: `slowest before ${before.maxMs} ms; ${loadNote(during, duringCpu)}`,
    });

    const costAfter = await costPerPage(ctx.clickhouseUrl, database, requests, headers);
    await serverQuiet(ctx.clickhouseUrl, database);
    const [after, afterCpu] = await load();
    rows.push({
      scenario: label,
      measure: 'gateway: the same pages after retention, the spans still reaching over the dropped year',
      value: after.perSecond,
      unit: 'pages/s',
      ...latencies(after),
      baseline: { name: 'the same pages before retention', value: before.perSecond },
      target: '≥ 0.8 of before',
      note: `${costAfter} (before: ${costBefore}); ${loadNote(after, afterCpu)}`,
    });

    const again = performance.now();
    const nothing = await retention.dropBefore(secondCutoff);
    rows.push({
      scenario: label,
      measure: 'retention: a run with nothing left to drop, as every hourly run after the first',
      value: Number(((performance.now() - again) / 1000).toFixed(3)),
      unit: 's',
      note: `${nothing.dropped.length} partitions dropped; the oldest event kept ${nothing.oldestKept?.toISOString() ?? 'none'}`,
    });
    return rows;
  } finally {
    await retention.close();
    await transport.close();
    await gateway.stop();
    await runSql(ctx.clickhouseUrl, 'default', `DROP DATABASE IF EXISTS ${database} SYNC`).catch(() => undefined);
  }
}
