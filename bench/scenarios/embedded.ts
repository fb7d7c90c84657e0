import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../test/support/processes.js';
import { autocannon, type LoadRun } from '../support/autocannon.js';
import { gatewayProcess, tsxProcess } from '../support/bench-process.js';
import { callerHeaders, type BenchContext } from '../support/context.js';
import type { Row } from '../support/results.js';
import { latencies } from './ceiling.js';

/** Enroll through the in-process bus of a gateway (ROLE=all) on the run's ClickHouse server, without Kafka. */
async function enrollOnClickHouseServer(ctx: BenchContext): Promise<LoadRun> {
  const gateway = await gatewayProcess({
    PORT: String(await freePort()),
    CLICKHOUSE_URL: ctx.clickhouseUrl,
    CLICKHOUSE_DATABASE: `bench_embedded_server_${ctx.run}`,
    AUTH_JWT_SECRET: ctx.secret,
    CURSOR_SECRET: ctx.secret,
  });
  try {
    const headers = await callerHeaders(ctx.secret, randomUUID());
    const url = `${gateway.url}/core/api/v1/projects/${randomUUID()}/fleets/${randomUUID()}/devices/${randomUUID()}/enroll`;
    return await autocannon({ url, method: 'POST', headers, body: '{"display_name":"Pump 7"}', connections: 50, seconds: ctx.seconds });
  } finally {
    await gateway.stop();
  }
}

/**
 * The embedded default (no Kafka, no ClickHouse server) as one process: enroll (202 once
 * the command and its event are in chDB) and the feed's first page, against bare Koa and
 * the bare chDB query in this run.
 */
export async function measureEmbedded(ctx: BenchContext, events: number): Promise<Row[]> {
  const dataDir = mkdtempSync(join(tmpdir(), 'core-gateway-bench-embedded-'));
  const orgId = randomUUID();
  const projectId = randomUUID();
  try {
    const seed = tsxProcess('bench/support/chdb-seed.ts', [dataDir, orgId, projectId, String(events), String(ctx.seconds)]);
    const [line] = await seed.waitForOutput(/^\{.*\}$/m, 10 * 60_000);
    await seed.exited;
    const bare = JSON.parse(line) as { perSecond: number; p50Ms: number; p99Ms: number; p999Ms: number };
    const gateway = await gatewayProcess({ PORT: String(await freePort()), DATA_DIR: dataDir, AUTH_JWT_SECRET: ctx.secret });
    try {
      const headers = await callerHeaders(ctx.secret, orgId);
      const api = `${gateway.url}/core/api/v1/projects/${projectId}`;
      const feed = await autocannon({ url: `${api}/events?limit=50`, headers, connections: 50, seconds: ctx.seconds });
      const enroll = await autocannon({ url: `${api}/fleets/${randomUUID()}/devices/${randomUUID()}/enroll`, method: 'POST', headers, body: '{"display_name":"Pump 7"}', connections: 50, seconds: ctx.seconds });
      const label = `${events.toLocaleString('en-US')} events`;
      const server = await enrollOnClickHouseServer(ctx);
      return [
        { scenario: 'embedded', measure: `bare chDB feed query, one at a time, ${label} merged into one part`, value: bare.perSecond, unit: 'queries/s', p50Ms: bare.p50Ms, p99Ms: bare.p99Ms, p999Ms: bare.p999Ms },
        { scenario: 'embedded', measure: `feed first page, 50 connections, ${label}`, value: feed.perSecond, unit: 'pages/s', ...latencies(feed), baseline: { name: 'bare chDB query', value: bare.perSecond } },
        { scenario: 'embedded', measure: 'enroll, 50 connections', value: enroll.perSecond, unit: 'req/s', ...latencies(enroll), baseline: { name: 'bare Koa POST 50', value: ctx.ceiling.post50.perSecond } },
        {
          scenario: 'embedded',
          measure: 'enroll on a ClickHouse server without Kafka, 50 connections',
          value: server.perSecond,
          unit: 'req/s',
          ...latencies(server),
          baseline: { name: 'enroll with chDB', value: enroll.perSecond },
          target: '≥ 1 (no slower than with chDB)',
        },
      ];
    } finally {
      await gateway.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
