import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { loadConfig } from '../../src/config/config.js';
import type { CanonicalEvent } from '../../src/generated/schema-types.js';
import { openStore } from '../../src/runtime/store-runtime.js';
import { createClickHouseEventStore } from '../../src/store/clickhouse-event-store.js';
import { storableEvent } from '../../src/store/event-rows.js';
import { createTopics } from '../../test/support/kafka-topics.js';
import { freePort } from '../../test/support/processes.js';
import { waitFor } from '../../test/support/wait-for.js';
import { gatewayProcess, tsxProcess } from '../support/bench-process.js';
import { telemetry } from '../support/bench-events.js';
import type { BenchContext } from '../support/context.js';
import type { Row } from '../support/results.js';

const PARTITIONS = 6;
const PRODUCE_BATCH = 5_000;

async function produce(kafka: Kafka, topic: string, events: readonly CanonicalEvent[]): Promise<void> {
  await createTopics(kafka, [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }]);
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  const inFlight = new Set<Promise<unknown>>();
  for (let i = 0; i < events.length; i += PRODUCE_BATCH) {
    const messages = events.slice(i, i + PRODUCE_BATCH).map((e) => ({ key: e.device_id ?? null, value: JSON.stringify(e) }));
    const sent = producer.send({ topic, acks: -1, messages });
    inFlight.add(sent);
    void sent.finally(() => inFlight.delete(sent));
    if (inFlight.size >= 4) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  await producer.disconnect();
}

/** Sum of the group's committed offsets on the topic. */
async function committed(kafka: Kafka, groupId: string, topic: string): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
    return (offsets?.partitions ?? []).reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
  } finally {
    await admin.disconnect();
  }
}

/**
 * Events/s of a consumer process from its first commit to the commit that covers every
 * event: only what is stored and acknowledged counts. Polled every 100 ms.
 */
async function consumerRate(kafka: Kafka, groupId: string, topic: string, total: number): Promise<number> {
  let first: { at: number; count: number } | undefined;
  const last = await waitFor(
    `${groupId} to commit ${total} events`,
    async () => {
      const count = await committed(kafka, groupId, topic);
      const at = Date.now();
      if (count > 0) first ??= { at, count };
      return count >= total ? at : undefined;
    },
    30 * 60_000,
    100,
  );
  if (first === undefined || last === first.at) return NaN;
  return Math.round((total - first.count) / ((last - first.at) / 1000));
}

async function directInsertRate(env: Record<string, string>, events: readonly CanonicalEvent[], batchSize: number): Promise<number> {
  const transport = await openStore(loadConfig(env));
  try {
    const store = createClickHouseEventStore(transport);
    const started = Date.now();
    for (let i = 0; i < events.length; i += batchSize) await store.insertEvents(events.slice(i, i + batchSize).map(storableEvent));
    return Math.round(events.length / ((Date.now() - started) / 1000));
  } finally {
    await transport.close();
  }
}

/**
 * Ingestion: EVENTS canonical events produced to a topic of six partitions before any
 * consumer starts, then read by (1) a kafkajs consumer that does nothing, (2) the
 * gateway's consumer process into the ClickHouse server, (3) a process of the embedded
 * shape (ROLE=all, chDB) consuming the same topic; baselines are (1) and the same rows
 * inserted straight into each store from this process.
 */
export async function measureIngest(ctx: BenchContext, total: number, batchSize: number): Promise<Row[]> {
  const kafka = new Kafka({ clientId: 'bench-ingest', brokers: [...ctx.brokers], logLevel: logLevel.NOTHING });
  const topic = `bench.ingest.${ctx.run}`;
  const events = telemetry(total, randomUUID(), randomUUID());
  await produce(kafka, topic, events);

  const raw = tsxProcess('bench/support/raw-consumer.ts', [ctx.brokers.join(','), topic, String(total)]);
  const [rawLine] = await raw.waitForOutput(/^\{.*\}$/m, 30 * 60_000);
  await raw.exited;
  const rawRate = (JSON.parse(rawLine) as { perSecond: number }).perSecond;

  const rows: Row[] = [{ scenario: 'ingest', measure: `kafkajs consumer doing nothing, ${total.toLocaleString('en-US')} events`, value: rawRate, unit: 'events/s' }];
  const common = {
    KAFKA_BROKERS: ctx.brokers.join(','),
    AUTH_JWT_SECRET: ctx.secret,
    EVENTS_TOPICS: topic,
    ENROLLMENT_COMMANDS_TOPIC: `bench.ingest-enrollments.${ctx.run}`,
    EDGE_POLICY_COMMANDS_TOPIC: `bench.ingest-edge-policy.${ctx.run}`,
    EVENTS_DLQ_TOPIC: `bench.ingest-dlq.${ctx.run}`,
    INGEST_BATCH_SIZE: String(batchSize),
  };
  const dataDir = mkdtempSync(join(tmpdir(), 'core-gateway-bench-ingest-'));
  try {
    for (const store of ['clickhouse-server', 'chdb'] as const) {
      const group = `bench-ingest-${store}-${randomBytes(3).toString('hex')}`;
      const storeEnv: Record<string, string> =
        store === 'chdb'
          ? { DATA_DIR: join(dataDir, 'consumer') }
          : { CLICKHOUSE_URL: ctx.clickhouseUrl, CLICKHOUSE_DATABASE: `bench_ingest_${ctx.run}` };
      const consumer = await gatewayProcess({ ...common, ...storeEnv, ROLE: store === 'chdb' ? 'all' : 'consumer', PORT: String(await freePort()), KAFKA_CONSUMER_GROUP: group });
      let rate: number;
      let rssMiB: number;
      try {
        rate = await consumerRate(kafka, group, topic, total);
        rssMiB = consumer.rssMiB();
      } finally {
        await consumer.stop();
      }
      const directEnv: Record<string, string> =
        store === 'chdb'
          ? { DATA_DIR: join(dataDir, 'direct') }
          : { CLICKHOUSE_URL: ctx.clickhouseUrl, CLICKHOUSE_DATABASE: `bench_direct_${ctx.run}`, AUTH_JWT_SECRET: ctx.secret };
      const direct = await directInsertRate({ ...directEnv, AUTH_JWT_SECRET: ctx.secret }, events, batchSize);
      rows.push({ scenario: 'ingest', measure: `direct insert into ${store}, batches of ${batchSize}`, value: direct, unit: 'events/s' });
      rows.push({
        scenario: 'ingest',
        measure: `consumer process into ${store}`,
        value: rate,
        unit: 'events/s',
        baseline: { name: 'kafkajs consumer doing nothing', value: rawRate },
        target: store === 'clickhouse-server' ? '≥ 100,000 events/s and ≥ 0.6 of raw' : undefined,
        note: `${(rate / direct).toFixed(2)}× direct insert; RSS ${rssMiB} MiB at the end`,
      });
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
  return rows;
}
