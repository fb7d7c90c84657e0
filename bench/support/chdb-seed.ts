/**
 * Fills an embedded store (chDB under DATA_DIR, as the gateway opens it) with COUNT
 * events of one project, then measures the bare feed query against it for SECONDS; prints
 * one JSON line and exits, so that the gateway process can open the directory after it.
 *   node --import tsx bench/support/chdb-seed.ts DATA_DIR ORG PROJECT COUNT SECONDS
 */
import { loadConfig } from '../../src/config/config.js';
import { openStore } from '../../src/runtime/store-runtime.js';
import { createClickHouseEventStore } from '../../src/store/clickhouse-event-store.js';
import { feedSql } from '../../src/store/feed-sql.js';
import { storableEvent } from '../../src/store/event-rows.js';
import { telemetry } from './bench-events.js';
import { summarize } from './latency.js';

const [dataDir = '', orgId = '', projectId = '', count = '0', seconds = '5'] = process.argv.slice(2);
const transport = await openStore(loadConfig({ DATA_DIR: dataDir, AUTH_JWT_SECRET: 'x'.repeat(32) }));
const store = createClickHouseEventStore(transport);
const events = telemetry(Number(count), orgId, projectId).map(storableEvent);
for (let i = 0; i < events.length; i += 20_000) await store.insertEvents(events.slice(i, i + 20_000));
// A settled table, as on the server in the feed scenario: a read takes the newest granule of every part it spans.
await transport.command('OPTIMIZE TABLE events FINAL');

const { sql, params } = feedSql({ orgId, projectId, filters: {}, after: undefined, limit: 51 });
const latencies: number[] = [];
const started = Date.now();
while (Date.now() - started < Number(seconds) * 1000) {
  const t0 = process.hrtime.bigint();
  await transport.query(sql, params);
  latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
}
const perSecond = Math.round(latencies.length / ((Date.now() - started) / 1000));
await transport.close();
console.log(JSON.stringify({ perSecond, ...summarize(latencies) }));
