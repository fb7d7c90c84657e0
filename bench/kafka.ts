/**
 * Benchmarks of the Kafka path, each against a baseline from the same run, on a local
 * broker started from Maven artifacts (scripts/kafka-start.sh):
 *  - enrollments (2xx after all in-sync replicas acknowledged the command) against
 *    bare Koa and against kafkajs sending one acks=-1 message per call, at the same concurrency;
 *  - ingestion: events produced to the events topic until all are in chDB, against
 *    inserting the same events into chDB directly.
 *   npm run bench:kafka
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { permissions } from '../src/auth/principal.js';
import { signHs256Token } from '../src/auth/sign-token.js';
import { loadConfig } from '../src/config.js';
import type { CanonicalEvent } from '../src/generated/schema-types.js';
import { API_PREFIX } from '../src/http/app.js';
import { createLogger } from '../src/logger.js';
import { startRuntime } from '../src/runtime/gateway-runtime.js';
import { createChdbTransport } from '../src/store/chdb-transport.js';
import { createClickHouseEventStore } from '../src/store/clickhouse-event-store.js';
import { migrate } from '../src/store/migrations.js';
import { startInfra } from '../test/support/infra.js';
import { startBaseline } from './baseline-server.js';
import { load, summarizeLatencies } from './load.js';

const DURATION_MS = Number(process.env['BENCH_SECONDS'] ?? 8) * 1000;
const CONCURRENCY = Number(process.env['BENCH_CONCURRENCY'] ?? 50);
const INGEST_EVENTS = Number(process.env['BENCH_INGEST_EVENTS'] ?? 200_000);

function events(count: number, orgId: string, projectId: string): CanonicalEvent[] {
  const start = Date.parse('2026-01-01T00:00:00Z');
  return Array.from({ length: count }, (_, i) => ({
    id: randomUUID(),
    org_id: orgId,
    project_id: projectId,
    domain: 'telemetry',
    entity: 'reading',
    action: 'recorded',
    occurred_at: new Date(start + i).toISOString(),
    device_id: `00000000-0000-4000-8000-${String(i % 500).padStart(12, '0')}`,
    payload: { seq: i, temperature: 20 + (i % 10) },
    source_service: 'bench',
  }));
}

const report = (results: Record<string, unknown>, name: string, value: unknown) => {
  results[name] = value;
  console.error(name, JSON.stringify(value));
};

async function main(): Promise<void> {
  const infra = await startInfra('local', { withClickHouse: false });
  const dataDir = mkdtempSync(join(tmpdir(), 'core-gateway-bench-'));
  const secret = randomBytes(32).toString('hex');
  const run = randomBytes(4).toString('hex');
  const eventsTopic = `bench.events.${run}`;
  const config = loadConfig({
    PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, AUTH_JWT_SECRET: secret, LOG_LEVEL: 'silent',
    KAFKA_BROKERS: infra.brokers.join(','), EVENTS_TOPICS: eventsTopic, KAFKA_TOPIC_PARTITIONS: '6',
    ENROLLMENT_COMMANDS_TOPIC: `bench.enroll.${run}`, EDGE_POLICY_COMMANDS_TOPIC: `bench.edge.${run}`,
    EVENTS_DLQ_TOPIC: `bench.dlq.${run}`, KAFKA_CONSUMER_GROUP: `bench-${run}`,
    KAFKA_PRODUCERS: process.env['KAFKA_PRODUCERS'] ?? '1',
  });
  const results: Record<string, unknown> = {};
  const baseline = await startBaseline();
  const runtime = await startRuntime(config, createLogger('silent'));
  const kafka = new Kafka({ clientId: 'bench', brokers: infra.brokers, logLevel: logLevel.NOTHING });
  try {
    const orgId = randomUUID();
    const projectId = randomUUID();
    const token = await signHs256Token(secret, { sub: 'bench', orgIds: [orgId], scopes: permissions });
    const headers = { authorization: `Bearer ${token}`, 'org-id': orgId, 'content-type': 'application/json' };
    const body = JSON.stringify({ display_name: 'bench' });

    report(results, `baseline: bare Koa POST (c=${CONCURRENCY})`, await load({
      url: `${baseline.url}/`, method: 'POST', headers, concurrency: CONCURRENCY, durationMs: DURATION_MS, expectStatus: 202, next: () => ({ body }),
    }));

    // Kafka floor: the same concurrency, each caller sending one acks=-1 message and waiting for it.
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const latencies: number[] = [];
    const until = Date.now() + DURATION_MS;
    const started = Date.now();
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (Date.now() < until) {
        const t0 = process.hrtime.bigint();
        await producer.send({ topic: `bench.enroll.${run}`, acks: -1, messages: [{ key: randomUUID(), value: body }] });
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
    }));
    await producer.disconnect();
    report(results, `baseline: kafkajs send, one acks=-1 message per call (c=${CONCURRENCY})`, {
      requests: latencies.length,
      perSecond: Math.round(latencies.length / ((Date.now() - started) / 1000)),
      ...summarizeLatencies(latencies),
    });

    report(results, `enroll through Kafka, command acknowledged (c=${CONCURRENCY})`, await load({
      url: `${runtime.url}${API_PREFIX}/projects/${projectId}/fleets/${randomUUID()}/devices`, method: 'POST', headers,
      concurrency: CONCURRENCY, durationMs: DURATION_MS, expectStatus: 202, next: () => ({ path: `/${randomUUID()}/enroll`, body }),
    }));

    // Ingest floor: the same events straight into a chDB of their own (after the runtime closes; one directory per process).
    const batch = events(INGEST_EVENTS, orgId, randomUUID());
    const ingestProducer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await ingestProducer.connect();
    const ingestStarted = Date.now();
    for (let i = 0; i < batch.length; i += 5000) {
      await ingestProducer.send({
        topic: eventsTopic, acks: -1,
        messages: batch.slice(i, i + 5000).map((e) => ({ key: e.device_id!, value: JSON.stringify(e) })),
      });
    }
    const producedAt = Date.now();
    await ingestProducer.disconnect();
    const projectOfBatch = batch[0]!.project_id;
    const engine = createChdbTransport({ path: join(dataDir, 'clickhouse') });
    for (;;) {
      const [row] = await engine.query<{ n: string }>('SELECT uniqExact(id) AS n FROM events WHERE project_id = {p:UUID}', { p: projectOfBatch });
      if (Number(row!.n) >= batch.length) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const ingestSeconds = (Date.now() - ingestStarted) / 1000;
    await engine.close();
    report(results, 'ingest: produce to Kafka until all stored', {
      events: batch.length,
      seconds: ingestSeconds,
      perSecond: Math.round(batch.length / ingestSeconds),
      producingSeconds: (producedAt - ingestStarted) / 1000,
    });
  } finally {
    await runtime.close();
    await baseline.close();
  }

  const floorDir = mkdtempSync(join(tmpdir(), 'core-gateway-bench-floor-'));
  try {
    const store = createChdbTransport({ path: floorDir });
    await migrate(store);
    const eventStore = createClickHouseEventStore(store);
    const batch = events(INGEST_EVENTS, randomUUID(), randomUUID());
    const t0 = Date.now();
    for (let i = 0; i < batch.length; i += 5000) await eventStore.insertEvents(batch.slice(i, i + 5000));
    const seconds = (Date.now() - t0) / 1000;
    report(results, 'baseline: the same events inserted into chDB directly, 5000 per insert', {
      events: batch.length, seconds, perSecond: Math.round(batch.length / seconds),
    });
    await store.close();
  } finally {
    rmSync(floorDir, { recursive: true, force: true });
    rmSync(dataDir, { recursive: true, force: true });
    await infra.stop();
  }
  console.log(JSON.stringify({ duration_s: DURATION_MS / 1000, concurrency: CONCURRENCY, results }, null, 2));
}

await main();
