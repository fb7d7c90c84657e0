import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import type { CanonicalEvent } from '../../src/generated/schema-types.js';
import { createTopics } from '../../test/support/kafka-topics.js';
import { freePort } from '../../test/support/processes.js';
import { waitFor } from '../../test/support/wait-for.js';
import { gatewayProcess, tsxProcess } from '../support/bench-process.js';
import { telemetry } from '../support/bench-events.js';
import { ENGINE_VARIANTS, kafkaEngineRate, preEncodedInsertRate, type EngineVariant } from '../support/clickhouse-baselines.js';
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
 * How fast a consumer drained the topic. `fromStart`: every event over the time from the
 * consumer's start (`startedAt`, before its process is spawned) to the commit that covers
 * every event, so a slow start counts; this is the figure read against ClickHouse's Kafka
 * engine, measured the same way. `afterFirstCommit`: the events after its first commit
 * over the time since, the rate once running. Only what is stored and acknowledged
 * counts. Polled every 100 ms.
 */
async function consumerRate(kafka: Kafka, groupId: string, topic: string, total: number, startedAt: number): Promise<{ fromStart: number; afterFirstCommit: number }> {
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
  const fromStart = Math.round(total / ((last - startedAt) / 1000));
  if (first === undefined || last === first.at) return { fromStart, afterFirstCommit: NaN };
  return { fromStart, afterFirstCommit: Math.round((total - first.count) / ((last - first.at) / 1000)) };
}

/**
 * Ingestion: EVENTS canonical events produced to a topic of six partitions before any
 * consumer starts, then read by (1) a kafkajs consumer that does nothing, (2) the
 * gateway's consumer process into the ClickHouse server, (3) ClickHouse's own Kafka
 * engine into a copy of the same table on the same server, at its defaults and tuned,
 * (4) a process of the embedded shape (ROLE=all, chDB) consuming the same topic; and the
 * server's ceiling, the same rows inserted already encoded.
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
  const count = total.toLocaleString('en-US');

  const rows: Row[] = [{ scenario: 'ingest', measure: `kafkajs consumer doing nothing, ${count} events`, value: rawRate, unit: 'events/s' }];
  const common = {
    KAFKA_BROKERS: ctx.brokers.join(','),
    AUTH_JWT_SECRET: ctx.secret,
    EVENTS_TOPICS: topic,
    ENROLLMENT_COMMANDS_TOPIC: `bench.ingest-enrollments.${ctx.run}`,
    EDGE_POLICY_COMMANDS_TOPIC: `bench.ingest-edge-policy.${ctx.run}`,
    EVENTS_DLQ_TOPIC: `bench.ingest-dlq.${ctx.run}`,
    INGEST_BATCH_SIZE: String(batchSize),
  };
  const productDb = `bench_ingest_${ctx.run}`;
  const consume = async (store: 'clickhouse-server' | 'chdb', storeEnv: Record<string, string>) => {
    const group = `bench-ingest-${store}-${randomBytes(3).toString('hex')}`;
    const startedAt = Date.now();
    const consumer = await gatewayProcess({ ...common, ...storeEnv, ROLE: store === 'chdb' ? 'all' : 'consumer', PORT: String(await freePort()), KAFKA_CONSUMER_GROUP: group });
    try {
      const { fromStart, afterFirstCommit } = await consumerRate(kafka, group, topic, total, startedAt);
      return { rate: fromStart, afterFirstCommit, rssMiB: consumer.rssMiB() };
    } finally {
      await consumer.stop();
    }
  };

  const server = await consume('clickhouse-server', { CLICKHOUSE_URL: ctx.clickhouseUrl, CLICKHOUSE_DATABASE: productDb });
  const engine: Record<EngineVariant, number> = { default: NaN, tuned: NaN };
  for (const variant of Object.keys(ENGINE_VARIANTS) as EngineVariant[]) {
    engine[variant] = await kafkaEngineRate({ url: ctx.clickhouseUrl, brokers: ctx.brokers, topic, productDb, db: `bench_engine_${ctx.run}`, variant, total });
    const { consumers, threadPerConsumer } = ENGINE_VARIANTS[variant];
    rows.push({
      scenario: 'ingest',
      measure: `ClickHouse's Kafka engine + materialized view into a copy of events, ${variant} (kafka_num_consumers = ${consumers}, kafka_thread_per_consumer = ${threadPerConsumer}), from its start`,
      value: engine[variant],
      unit: 'events/s',
    });
  }
  const ceiling = await preEncodedInsertRate({ url: ctx.clickhouseUrl, productDb, db: `bench_ceiling_${ctx.run}`, events, batchSize });
  rows.push({ scenario: 'ingest', measure: `pre-encoded JSONEachRow insert into a copy of events, batches of ${batchSize.toLocaleString('en-US')}, one at a time`, value: ceiling, unit: 'events/s' });
  const better: EngineVariant = engine.tuned >= engine.default ? 'tuned' : 'default';
  rows.push({
    scenario: 'ingest',
    measure: `consumer process (ROLE=consumer) into clickhouse-server, ${count} events, from its start`,
    value: server.rate,
    unit: 'events/s',
    baseline: { name: `Kafka engine, ${better}`, value: engine[better] },
    target: '≥ 1.25× the tuned Kafka engine, ≥ 100,000 events/s, ≥ 0.6 of the pre-encoded insert',
    note: `${(server.rate / ceiling).toFixed(2)} of the pre-encoded insert; ${server.afterFirstCommit.toLocaleString('en-US')} events/s after its first commit; ${(server.rate / rawRate).toFixed(2)} of raw kafkajs; RSS ${server.rssMiB} MiB at the end`,
  });

  const dataDir = mkdtempSync(join(tmpdir(), 'core-gateway-bench-ingest-'));
  try {
    const chdb = await consume('chdb', { DATA_DIR: join(dataDir, 'consumer') });
    rows.push({
      scenario: 'ingest',
      measure: `ROLE=all process into chdb, ${count} events, from its start`,
      value: chdb.rate,
      unit: 'events/s',
      baseline: { name: 'consumer into clickhouse-server', value: server.rate },
      target: '≥ 1 (as fast as into the server)',
      note: `${chdb.afterFirstCommit.toLocaleString('en-US')} events/s after its first commit; RSS ${chdb.rssMiB} MiB at the end`,
    });
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
  return rows;
}
