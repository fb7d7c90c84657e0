/**
 * Benchmarks of the embedded default, each against a baseline measured in the same run:
 *  - feed pages with BENCH_EVENTS events in one project (default 100,000) among as many in others;
 *  - enrollments (202 only after the command and its event are stored in chDB).
 * Baselines: bare Koa on the same machine (HTTP floor) and the bare store query (engine floor).
 *   npm run bench
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signHs256Token } from '../src/auth/sign-token.js';
import { permissions } from '../src/auth/principal.js';
import { loadConfig } from '../src/config.js';
import type { CanonicalEvent, CanonicalEventPageResponse } from '../src/generated/schema-types.js';
import { API_PREFIX } from '../src/http/app.js';
import { createLogger } from '../src/logger.js';
import { startRuntime } from '../src/runtime/gateway-runtime.js';
import { createChdbTransport } from '../src/store/chdb-transport.js';
import { feedSql } from '../src/store/clickhouse-event-store.js';
import type { SqlParams } from '../src/store/sql-transport.js';
import { startBaseline } from './baseline-server.js';
import { load, summarizeLatencies } from './load.js';

const EVENTS = Number(process.env['BENCH_EVENTS'] ?? 100_000);
const DURATION_MS = Number(process.env['BENCH_SECONDS'] ?? 5) * 1000;
const SEED_BATCH = 20_000;

function events(count: number, orgId: string, projectId: string, devices: string[]): CanonicalEvent[] {
  const start = Date.parse('2026-01-01T00:00:00Z');
  return Array.from({ length: count }, (_, i) => ({
    id: randomUUID(),
    org_id: orgId,
    project_id: projectId,
    domain: ['telemetry', 'devices', 'edge', 'ota'][i % 4]!,
    entity: 'reading',
    action: 'recorded',
    occurred_at: new Date(start + i * 250).toISOString(),
    device_id: devices[i % devices.length]!,
    fleet_id: null,
    payload: { seq: i, temperature: 20 + (i % 10) },
    source_service: 'bench',
  }));
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'core-gateway-bench-'));
  const secret = randomBytes(32).toString('hex');
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, AUTH_JWT_SECRET: secret, LOG_LEVEL: 'silent' });
  const runtime = await startRuntime(config, createLogger('silent'));
  const baseline = await startBaseline();
  const orgId = randomUUID();
  const projectId = randomUUID();
  const devices = Array.from({ length: 1000 }, () => randomUUID());
  const results: Record<string, unknown> = {};
  try {
    const seedStarted = Date.now();
    for (const [org, project] of [[orgId, projectId], [randomUUID(), randomUUID()]] as const) {
      for (let done = 0; done < EVENTS; done += SEED_BATCH) {
        const batch = events(Math.min(SEED_BATCH, EVENTS - done), org, project, devices);
        await runtime.ingestor.ingestMessages(batch.map((e) => ({ value: JSON.stringify(e) })));
      }
    }
    results['seed'] = { events: EVENTS * 2, seconds: (Date.now() - seedStarted) / 1000 };

    const token = await signHs256Token(secret, { sub: 'bench', orgIds: [orgId], scopes: permissions });
    const headers = { authorization: `Bearer ${token}`, 'org-id': orgId };
    const feedUrl = `${runtime.url}${API_PREFIX}/projects/${projectId}/events`;
    // A cursor after 101 pages of 200, or as deep as the feed goes when BENCH_EVENTS is small.
    let cursor = '';
    let pagesDeep = 0;
    for (let next: string | null = null; pagesDeep <= 100; pagesDeep += 1) {
      const query: string = next === null ? '' : `&cursor=${encodeURIComponent(next)}`;
      const page = (await (await fetch(`${feedUrl}?limit=200${query}`, { headers })).json()) as CanonicalEventPageResponse;
      next = page.meta.next_cursor;
      if (next === null) break;
      cursor = next;
    }

    // Engine floor: the same SQL straight to chDB, on a second connection to the same directory.
    const engine = createChdbTransport({ path: join(dataDir, 'clickhouse') });
    const timeQuery = async (name: string, sql: string, params: SqlParams) => {
      const times: number[] = [];
      const until = Date.now() + DURATION_MS;
      while (Date.now() < until) {
        const t0 = process.hrtime.bigint();
        await engine.query(sql, params);
        times.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
      results[name] = { queries: times.length, ...summarizeLatencies(times) };
      console.error(name, JSON.stringify(results[name]));
    };
    await timeQuery('engine floor: SELECT 1', 'SELECT 1 AS one', {});
    const first = feedSql({ orgId, projectId, filters: {}, after: undefined, limit: 51 });
    await timeQuery('engine: feed first-page SQL, limit 50', first.sql, first.params);

    const run = (name: string, url: string, concurrency: number, extra: Partial<Parameters<typeof load>[0]> = {}) =>
      load({ url, headers, concurrency, durationMs: DURATION_MS, expectStatus: 200, ...extra }).then((r) => {
        results[name] = r;
        console.error(name, JSON.stringify(r));
      });

    await run('baseline: bare Koa GET (c=1)', `${baseline.url}/`, 1);
    await run('feed first page, limit 50 (c=1)', `${feedUrl}?limit=50`, 1);
    await run(`feed page after ${pagesDeep} pages of 200, via cursor, limit 50 (c=1)`, `${feedUrl}?limit=50&cursor=${encodeURIComponent(cursor)}`, 1);
    await run('feed filtered by device_id, limit 50 (c=1)', `${feedUrl}?limit=50&device_id=${devices[7]}`, 1);
    await run('feed first page, limit 200 (c=1)', `${feedUrl}?limit=200`, 1);
    await run('feed first page, limit 50 (c=16)', `${feedUrl}?limit=50`, 16);

    const body = JSON.stringify({ display_name: 'bench' });
    const post = { method: 'POST', expectStatus: 202, headers: { ...headers, 'content-type': 'application/json' } };
    await run('baseline: bare Koa POST (c=50)', `${baseline.url}/`, 50, { ...post, next: () => ({ body }) });
    await run('enroll, embedded chDB (c=50)', `${runtime.url}${API_PREFIX}/projects/${projectId}/fleets/${devices[0]}/devices`, 50, {
      ...post,
      next: () => ({ path: `/${randomUUID()}/enroll`, body }),
    });
  } finally {
    await baseline.close();
    await runtime.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  console.log(JSON.stringify({ events_per_project: EVENTS, duration_s: DURATION_MS / 1000, results }, null, 2));
}

await main();
