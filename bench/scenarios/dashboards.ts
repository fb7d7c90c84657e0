/**
 * Dashboards that poll (issue 52, item 4), on the production shape: the ClickHouse server,
 * one gateway in Kafka mode with its ingest consumer (ROLE=all), the run's broker. A store
 * filled with a history over 1,000 projects and 100,000 devices, then, while 1,000 events
 * a second go to the events topic, project dashboards polling their first page every 5 s
 * and device dashboards theirs every 10 s, from a process of their own
 * (bench/support/dashboard-clients.ts), for 100 and for 1,000 dashboards of each kind,
 * with kept first pages off and on. Each answer's staleness is a sample of the answers
 * compared with the store afterwards (bench/support/dashboard-store.ts); the store's
 * queries per second are the server's own count of SELECTs over the run.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { waitFor } from '../../test/support/wait-for.js';
import { commandTopicEnvironment, commandTopicNames } from '../../test/support/command-topics.js';
import { autocannon } from '../support/autocannon.js';
import { gatewayProcess, serverGatewayEnvironment, tsxProcess } from '../support/bench-process.js';
import type { BenchContext } from '../support/context.js';
import { withCpu } from '../support/cpu-usage.js';
import type { Dashboard, DashboardRun } from '../support/dashboard-clients.js';
import { produceLive } from '../support/dashboard-producer.js';
import { selectQueries, stalenessOfAll, writeHistory } from '../support/dashboard-store.js';
import { device, org, project, PROJECTS } from '../support/history.js';
import { firstPageCounts } from '../support/gateway-metrics.js';
import { runSql } from '../support/server-sql.js';
import { summarize } from '../support/latency.js';
import type { Row } from '../support/results.js';
import { latencies } from './ceiling.js';

const EVENTS_PER_SECOND = 1000;
const PROJECT_PERIOD_MS = 5000;
const DEVICE_PERIOD_MS = 10_000;
/** Live events go to the first 10 devices of each project, so a polled device is written about as often as it is polled. */
const LIVE_DEVICES = 10;
const PAGE = 50;
const SAMPLES = 1500;
/** The gateway's default; the bound on staleness is this plus a second. */
const STREAM_SETTLE_MS = 2000;
/** The gateway's default (src/config/config.ts): kept first pages on. */
const KEPT_AGE_MS = 300_000;

const liveTarget = (n: number) => {
  const p = n % PROJECTS;
  return { orgId: org(p), projectId: project(p), deviceId: device(p, Math.floor(n / PROJECTS) % LIVE_DEVICES) };
};
const projectDashboards = (count: number): Dashboard[] => Array.from({ length: count }, (_, k) => ({ orgId: org(k % PROJECTS), projectId: project(k % PROJECTS) }));
const deviceDashboards = (count: number): Dashboard[] =>
  Array.from({ length: count }, (_, k) => {
    const p = k % PROJECTS;
    return { orgId: org(p), projectId: project(p), deviceId: device(p, Math.floor(k / PROJECTS) % LIVE_DEVICES) };
  });

export interface DashboardSettings {
  /** Events written before the dashboards start. */
  readonly events: number;
  readonly batch: number;
  /** Dashboards of each kind, one run each. */
  readonly counts: readonly number[];
  readonly seconds: number;
  /** Runs with kept first pages off, on, or both, in this order. */
  readonly kept: readonly ('off' | 'on')[];
}

async function dashboardGateway(ctx: BenchContext, database: string, topic: string, keptAgeMs: number) {
  return gatewayProcess({
    ROLE: 'all',
    ...(await serverGatewayEnvironment(ctx, database)),
    KAFKA_TOPIC_PARTITIONS: '6',
    KAFKA_CONSUMER_GROUP: `bench-dashboards-${ctx.run}`,
    EVENTS_TOPICS: topic,
    EVENTS_DLQ_TOPIC: `bench.dashboards-dlq.${ctx.run}`,
    ...commandTopicEnvironment(commandTopicNames((t) => `bench.dashboards.${t}.${ctx.run}`)),
    FEED_FIRST_PAGE_MAX_AGE_MS: String(keptAgeMs),
  });
}

const pct = (part: number, whole: number) => `${Math.round((100 * part) / Math.max(1, whole))}%`;

export async function measureDashboards(ctx: BenchContext, settings: DashboardSettings): Promise<Row[]> {
  const database = `bench_dashboards_${ctx.run}`;
  const topic = `bench.dashboards-events.${ctx.run}`;
  const kafka = new Kafka({ clientId: 'bench-dashboards', brokers: [...ctx.brokers], logLevel: logLevel.NOTHING });
  const label = `dashboards, ${settings.events.toLocaleString('en-US')} events before, ${EVENTS_PER_SECOND} events/s`;
  const rows: Row[] = [];
  const scratch = mkdtempSync(join(tmpdir(), 'core-gateway-bench-dashboards-'));
  const specFile = join(scratch, 'spec.json');
  const resultFile = join(scratch, 'result.json');
  /** The dashboards of `spec` polling for its seconds, from a process of their own; what they saw and the gateway's CPU meanwhile. */
  const poll = async (spec: object) => {
    writeFileSync(specFile, JSON.stringify(spec));
    const clients = tsxProcess('bench/support/dashboard-clients.ts', [specFile, resultFile]);
    try {
      const [, cpu] = await withCpu(gateway.pid, () => clients.waitForOutput(/^\{"done":\d+\}$/m, (settings.seconds + 300) * 1000));
      return { run: JSON.parse(readFileSync(resultFile, 'utf8')) as DashboardRun, cpu };
    } finally {
      await clients.stop();
    }
  };
  // The first gateway creates the schema and the topics; the history goes in behind it.
  let gateway = await dashboardGateway(ctx, database, topic, 0);
  try {
    await writeHistory(ctx.clickhouseUrl, database, settings.events, settings.batch);
    const select1 = await autocannon({ url: `${ctx.clickhouseUrl}/?query=${encodeURIComponent('SELECT 1')}`, connections: 32, seconds: ctx.seconds });
    rows.push({ scenario: label, measure: 'server: SELECT 1, 32 connections', value: select1.perSecond, unit: 'req/s', ...latencies(select1) });
    for (const keptAgeMs of settings.kept.map((mode) => (mode === 'on' ? KEPT_AGE_MS : 0))) {
      if (keptAgeMs !== 0) {
        await gateway.stop();
        gateway = await dashboardGateway(ctx, database, topic, keptAgeMs);
      }
      const mode = keptAgeMs === 0 ? 'kept first pages off' : `kept first pages on (FEED_FIRST_PAGE_MAX_AGE_MS=${keptAgeMs})`;
      let fewer: number | undefined;
      for (const count of settings.counts) {
        const producing = new AbortController();
        const phaseStart = Date.now();
        const sending = produceLive(kafka, topic, EVENTS_PER_SECOND, liveTarget, producing.signal);
        try {
          // The consumer is storing the live events before the dashboards start.
          await waitFor(
            'the live events to reach the store',
            async () => (Number((await runSql(ctx.clickhouseUrl, database, `SELECT count() FROM events WHERE ingested_at >= fromUnixTimestamp64Milli(${phaseStart}, 'UTC')`)).trim()) > 0 ? true : undefined),
            120_000,
            200,
          );
          const spec = {
            url: gateway.url,
            secret: ctx.secret,
            projects: projectDashboards(count),
            devices: deviceDashboards(count),
            projectPeriodMs: PROJECT_PERIOD_MS,
            devicePeriodMs: DEVICE_PERIOD_MS,
            seconds: settings.seconds,
            samples: SAMPLES,
            limit: PAGE,
          };
          // The dashboards open: each one's first answer is a store read wherever pages are
          // kept, so as many reads as dashboards come at once. Reported, and not measured
          // against the targets, which are about dashboards that stay open.
          const opening = await poll(spec);
          const queriesBefore = await selectQueries(ctx.clickhouseUrl);
          const keptBefore = keptAgeMs === 0 ? undefined : await firstPageCounts(gateway.url);
          const started = performance.now();
          const { run, cpu } = await poll(spec);
          const seconds = (performance.now() - started) / 1000;
          const keptAfter = keptAgeMs === 0 ? undefined : await firstPageCounts(gateway.url);
          // The count's own SELECT is left out.
          const queriesPerSecond = Number((((await selectQueries(ctx.clickhouseUrl)) - queriesBefore - 1) / seconds).toFixed(1));
          producing.abort();
          const produced = await sending;
          const stale = await stalenessOfAll(ctx.clickhouseUrl, database, run.samples);
          const behind = stale.map((s) => s.behindMs);
          const missing = stale.filter((s) => s.missed > 0).length;
          const staleness = summarize([...behind]);
          const who = `${count.toLocaleString('en-US')} project + ${count.toLocaleString('en-US')} device dashboards, ${mode}`;
          const failed = Object.entries(run.failures).map(([status, n]) => `${n} × ${status}`).join(', ') || 'none';
          const opened = `opening ${settings.seconds} s before (not counted): ${opening.run.pages} pages, p99 ${Math.round(opening.run.project.p99Ms)} ms project, ${Math.round(opening.run.device.p99Ms)} ms device, ${Object.values(opening.run.failures).reduce((n, f) => n + f, 0)} failed`;
          // Where the gateway answered from, and how often its watch of the store's writes lost track (no kept page served until it caught up).
          const kept =
            keptBefore === undefined || keptAfter === undefined
              ? ''
              : `; ${pct(keptAfter.memory - keptBefore.memory, keptAfter.memory - keptBefore.memory + keptAfter.store - keptBefore.store)} from memory (${keptAfter.memory - keptBefore.memory} from memory, ${keptAfter.store - keptBefore.store} from the store, ${keptAfter.merged - keptBefore.merged} kept pages brought up to date, ${keptAfter.refreshed - keptBefore.refreshed} read again, ${keptAfter.evicted - keptBefore.evicted} pushed out to make room), the watch lost track ${keptAfter.lostTrack - keptBefore.lostTrack} times, ${keptAfter.latePolls - keptBefore.latePolls} of its ${keptAfter.polls - keptBefore.polls} polls over 500 ms, its windows read as rows ${keptAfter.windows.rows - keptBefore.windows.rows}, named ${keptAfter.windows.named - keptBefore.windows.named}, all pages dropped ${keptAfter.windows.all - keptBefore.windows.all}, ${keptAfter.watched === 1 ? 'following' : 'blind'} at the end; gateway RSS ${gateway.rssMiB()} MiB`;
          const common = `${run.pages} pages (${run.perSecond}/s)${kept}, failed: ${failed}; ${produced} events produced; gateway ${cpu.processCores.toFixed(2)} cores, load generator ${run.generatorCores.toFixed(2)} of a core (polls at most ${run.maxLateMs} ms behind schedule; ${run.late} polls due while the last answer was out), machine ${Math.round(cpu.machineBusy * 100)}% busy`;
          for (const kind of ['project', 'device'] as const) {
            const k = run[kind];
            rows.push({
              scenario: label,
              measure: `gateway: a ${kind} dashboard's first page, ${who}`,
              value: k.p99Ms,
              unit: 'ms p99',
              p50Ms: k.p50Ms,
              p99Ms: k.p99Ms,
              p999Ms: k.p999Ms,
              baseline: { name: 'SELECT 1 p99 (ms)', value: select1.p99Ms },
              target: 'p99 ≤ 100 ms',
              note: `${k.pages} ${kind} pages; ${common}; ${opened}`,
            });
          }
          rows.push({
            scenario: label,
            measure: `gateway: staleness of an answer (the oldest store time it misses, before its request), ${who}`,
            value: staleness.p99Ms,
            unit: 'ms p99',
            p50Ms: staleness.p50Ms,
            p99Ms: staleness.p99Ms,
            p999Ms: staleness.p999Ms,
            target: `every answer ≤ STREAM_SETTLE_MS + 1 s (${STREAM_SETTLE_MS + 1000} ms)`,
            note: `${stale.length} answers sampled of ${run.pages}: ${missing} (${pct(missing, stale.length)}) missed an event already stored, the most behind ${Math.max(0, ...behind)} ms`,
          });
          rows.push({
            scenario: label,
            measure: `server: SELECT queries a second, ${who}`,
            value: queriesPerSecond,
            unit: 'queries/s',
            ...(fewer === undefined ? {} : { baseline: { name: `${settings.counts[0]!.toLocaleString('en-US')} dashboards of each kind`, value: fewer } }),
            target: 'independent of the number of dashboards',
            note: `every SELECT the server ran over ${seconds.toFixed(0)} s: the pages' reads, the watch's polls, the bench's own count`,
          });
          fewer ??= queriesPerSecond;
        } finally {
          producing.abort();
          await sending.catch(() => 0);
        }
      }
    }
    return rows;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    await gateway.stop();
    await runSql(ctx.clickhouseUrl, 'default', `DROP DATABASE IF EXISTS ${database} SYNC`).catch(() => undefined);
  }
}
