import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@clickhouse/client';
import { Kafka, logLevel } from 'kafkajs';
import type { CanonicalEvent } from '../../src/generated/schema-types.js';
import { compressionType, registerCompressionCodecs } from '../../src/kafka/compression-codecs.js';
import { createTopics } from '../../test/support/kafka-topics.js';
import { freePort } from '../../test/support/processes.js';
import { waitFor } from '../../test/support/wait-for.js';
import { gatewayProcess, tsxProcess } from '../support/bench-process.js';
import { telemetry } from '../support/bench-events.js';
import { describeEngine, ENGINE_SWEEP, preEncodedInsertRate, startKafkaEngine, type EngineConfig, type EngineTarget } from '../support/clickhouse-baselines.js';
import type { BenchContext } from '../support/context.js';
import { produceWarmUp, producePaced } from '../support/paced-producer.js';
import { cpuMeter, cpuMicrosPerEvent, cpuSeconds, describeCpuPerEvent, listenerPid, portOf, type CpuBreakdown } from '../support/process-cpu.js';
import type { Row } from '../support/results.js';
import { assertSameEvents, ingestTiming, mergesSettled, storedDelay, waitForRows, type IngestTiming } from '../support/stored-rows.js';
import { commandTopicEnvironment, commandTopicNames } from '../../test/support/command-topics.js';
import { parseMetrics, samplesOf } from '../../test/support/metrics-text.js';

const PARTITIONS = 6;
const PRODUCE_BATCH = 5_000;
const CODECS = ['none', 'lz4', 'zstd'] as const;
type Codec = (typeof CODECS)[number];
const WARM_UP_EVENTS = 1_000;
/** The consumer group's size beside the single process: one process per core of this machine, as the engine's best runs two consumers. */
const GROUP_PROCESSES = 2;
/** The sweep's fastest configurations that then read each topic. */
const FINALISTS = 2;

async function produce(kafka: Kafka, topic: string, events: readonly CanonicalEvent[], codec: Codec): Promise<void> {
  await createTopics(kafka, [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }]);
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  const inFlight = new Set<Promise<unknown>>();
  for (let i = 0; i < events.length; i += PRODUCE_BATCH) {
    const messages = events.slice(i, i + PRODUCE_BATCH).map((e) => ({ key: e.device_id ?? null, value: JSON.stringify(e) }));
    const sent = producer.send({ topic, acks: -1, compression: compressionType(codec), messages });
    inFlight.add(sent);
    void sent.finally(() => inFlight.delete(sent));
    if (inFlight.size >= 4) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  await producer.disconnect();
}

/** The consumer's histogram of an event's age when visible, from its Kafka timestamp (src/ingest/freshness.ts). */
const VISIBLE_AGE = 'ingest_visible_age_from_kafka_timestamp_seconds_bucket';

/** A process's cumulative buckets of VISIBLE_AGE, by upper bound (s), +Inf last. */
async function visibleAgeBuckets(url: string): Promise<Map<number, number>> {
  const res = await fetch(`${url}/metrics`);
  if (!res.ok) throw new Error(`${url}/metrics answered ${res.status}`);
  const buckets = samplesOf(parseMetrics(await res.text()), VISIBLE_AGE).map((s) => [Number(s.labels['le'] === '+Inf' ? Infinity : s.labels['le']), s.value] as const);
  return new Map(buckets.sort((a, b) => a[0] - b[0]));
}

/**
 * The q-quantile (ms) of what was observed between two readings of the buckets, as
 * Prometheus' histogram_quantile reads it: linear within the bucket that holds it, the
 * highest finite bound when it falls in +Inf. NaN when nothing was observed.
 */
function quantileMs(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>, q: number): number {
  const deltas = [...after].map(([le, n]) => [le, n - (before.get(le) ?? 0)] as const);
  const total = deltas.at(-1)?.[1] ?? 0;
  if (total <= 0) return NaN;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const [le, cumulative] of deltas) {
    if (cumulative >= rank) {
      if (le === Infinity) return lower * 1000;
      return (lower + ((le - lower) * (rank - below)) / Math.max(cumulative - below, 1e-9)) * 1000;
    }
    lower = le;
    below = cumulative;
  }
  return lower * 1000;
}

/** One side's run over a topic: its timing from the table, and the CPU of every process that took part. */
interface IngestRun extends IngestTiming {
  readonly cpu: CpuBreakdown;
}

const fmt = (n: number) => (Number.isFinite(n) ? n.toLocaleString('en-US') : '—');
const times = (a: number, b: number) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}×` : '—');

/**
 * Ingestion against ClickHouse's own Kafka engine at its best, on the same server, the
 * same machine and the same clock. EVENTS canonical events are produced to three topics
 * of six partitions (uncompressed, lz4, zstd; kafkajs with the gateway's codecs) before
 * any consumer starts. Once per run, the engine's throughput settings are swept over a
 * coarse grid on a smaller topic of its own. On each topic the gateway's consumer process
 * reads it into the server; the sweep's two fastest configurations (by rate from its
 * start) each read it, the faster there being the anchor; then a consumer group of two
 * processes reads it again. Both sides are timed from the table (`ingested_at`): from the
 * start (the consumer's spawn, the view's creation) to the last stored event, and from
 * the first stored row to the last; every copy must hold the same events; each side
 * starts once the server has no merge running. CPU is summed over the broker, the
 * ClickHouse server and, for ours, the consumer processes. Then each side's delay from
 * produce to visible under a steady load offered at half the slower side's rate, with
 * the rate the producer reached beside each.
 */
export async function measureIngest(ctx: BenchContext, total: number, batchSize: number, sweepTotal: number, freshnessSeconds: number): Promise<Row[]> {
  registerCompressionCodecs();
  const kafka = new Kafka({ clientId: 'bench-ingest', brokers: [...ctx.brokers], logLevel: logLevel.NOTHING });
  const ch = createClient({ url: ctx.clickhouseUrl });
  const pids = { broker: listenerPid(portOf(ctx.brokers[0]!)), server: listenerPid(portOf(ctx.clickhouseUrl)) };
  const count = total.toLocaleString('en-US');
  const rows: Row[] = [];
  // Each figure is printed as it is measured, so a run that fails late still shows what it measured.
  const keep = (...measured: Row[]) => {
    rows.push(...measured);
    for (const r of measured) console.error(`    ${r.measure}: ${fmt(r.value)} ${r.unit}${r.note === undefined ? '' : ` (${r.note})`}`);
  };
  const orgId = randomUUID();
  const topicOf = (codec: Codec) => `bench.ingest-${codec}.${ctx.run}`;
  const productDb = (codec: Codec) => `bench_ingest_${codec}_${ctx.run}`;
  const engineDb = `bench_engine_${ctx.run}`;
  const events = telemetry(total, orgId, randomUUID());
  for (const codec of CODECS) await produce(kafka, topicOf(codec), events, codec);
  const sweepTopic = `bench.ingest-sweep.${ctx.run}`;
  await produce(kafka, sweepTopic, telemetry(sweepTotal, orgId, randomUUID()), 'none');

  const common = {
    KAFKA_BROKERS: ctx.brokers.join(','),
    AUTH_JWT_SECRET: ctx.secret,
    ...commandTopicEnvironment(commandTopicNames((topic) => `bench.ingest.${topic}.${ctx.run}`)),
    EVENTS_DLQ_TOPIC: `bench.ingest-dlq.${ctx.run}`,
    INGEST_BATCH_SIZE: String(batchSize),
  };
  const consumerProcess = async (topic: string, storeEnv: Record<string, string>, group = `bench-ingest-${randomBytes(3).toString('hex')}`, role = 'consumer'): ReturnType<typeof gatewayProcess> =>
    gatewayProcess({ ...common, ...storeEnv, EVENTS_TOPICS: topic, ROLE: role, PORT: String(await freePort()), KAFKA_CONSUMER_GROUP: group });

  /**
   * The gateway's consumer group reading `codec`'s topic into the server: `processes`
   * ROLE=consumer processes in one group, spawned together, as a deployment scales its
   * consumers (each process is one event loop; the engine's best runs two consumers too).
   */
  const ours = async (codec: Codec, processes: number): Promise<IngestRun & { rssMiB: number[] }> => {
    await mergesSettled(ch);
    const meter = cpuMeter(pids);
    const startedAt = Date.now();
    const db = processes === 1 ? productDb(codec) : `${productDb(codec)}_x${processes}`;
    const group = `bench-ingest-${randomBytes(3).toString('hex')}`;
    const consumers = await Promise.all(Array.from({ length: processes }, () => consumerProcess(topicOf(codec), { CLICKHOUSE_URL: ctx.clickhouseUrl, CLICKHOUSE_DATABASE: db }, group)));
    try {
      await waitForRows(ch, `${db}.events`, total, `the consumer group of ${processes}`);
      // The consumers' CPU from their birth, start-up included, as the engine's start-up is in the server's.
      const cpu = { ...meter(), consumer: consumers.reduce((sum, c) => sum + cpuSeconds(c.pid), 0) };
      return { ...(await ingestTiming(ch, `${db}.events`, total, startedAt)), cpu, rssMiB: consumers.map((c) => c.rssMiB()) };
    } finally {
      await Promise.all(consumers.map((c) => c.stop()));
    }
  };
  /** The Kafka engine reading `topic`, `expected` events, into a copy of `template`'s events table. */
  const engine = async (topic: string, expected: number, template: string, name: string, config: EngineConfig): Promise<IngestRun & { copy: string }> => {
    const target: EngineTarget = { brokers: ctx.brokers, topic, productDb: template, db: engineDb, name };
    await mergesSettled(ch);
    const meter = cpuMeter(pids);
    const run = await startKafkaEngine(ch, target, config);
    try {
      await waitForRows(ch, run.copy, expected, `the Kafka engine (${describeEngine(config)})`);
      const cpu = meter();
      return { ...(await ingestTiming(ch, run.copy, expected, run.startedAt)), cpu, copy: run.copy };
    } finally {
      await run.stop();
    }
  };

  try {
    // 1. The floor: kafkajs reading each topic and doing nothing.
    const raw: Partial<Record<Codec, number>> = {};
    for (const codec of CODECS) {
      const proc = tsxProcess('bench/support/raw-consumer.ts', [ctx.brokers.join(','), topicOf(codec), String(total)]);
      const [line] = await proc.waitForOutput(/^\{.*\}$/m, 30 * 60_000);
      await proc.exited;
      raw[codec] = (JSON.parse(line) as { perSecond: number }).perSecond;
    }

    // 2. Ours on the uncompressed topic first: its process creates the product's schema the engine's copies are made from.
    const oursRuns: Partial<Record<Codec, IngestRun & { rssMiB: number[] }>> = {};
    console.error('  ingest: the consumer, uncompressed topic');
    oursRuns.none = await ours('none', 1);

    // 3. The sweep, once per run, on a topic of its own.
    const swept: { config: EngineConfig; run: IngestRun }[] = [];
    for (const [i, config] of ENGINE_SWEEP.entries()) {
      console.error(`  ingest: sweep ${i + 1}/${ENGINE_SWEEP.length}, ${describeEngine(config)}`);
      try {
        const run = await engine(sweepTopic, sweepTotal, productDb('none'), `sweep${i}`, config);
        keep({
          scenario: 'ingest',
          measure: `sweep: Kafka engine, ${describeEngine(config)}, ${sweepTotal.toLocaleString('en-US')} events, from its start`,
          value: run.fromStart,
          unit: 'events/s',
          note: `${fmt(run.firstToLast)} events/s from its first stored row to its last; first row after ${fmt(run.firstRowMs)} ms; ${describeCpuPerEvent(run.cpu, sweepTotal)}`,
        });
        swept.push({ config, run });
      } catch (error) {
        keep({ scenario: 'ingest', measure: `sweep: Kafka engine, ${describeEngine(config)}: refused (${(error as Error).message.slice(0, 160)})`, value: NaN, unit: 'events/s' });
      }
    }
    if (swept.length === 0) throw new Error('no configuration of the Kafka engine ran');
    // One sweep point is one sample on a shared machine: the two fastest each read every
    // topic, and the faster of them there is the anchor, so noise in the sweep cannot
    // hand ours a weaker engine.
    const finalists = swept.sort((a, b) => b.run.fromStart - a.run.fromStart).slice(0, FINALISTS).map((f) => f.config);
    let freshnessConfig: EngineConfig | undefined;

    // 4. Each topic: ours, then the engine's best, compared.
    for (const codec of CODECS) {
      console.error(`  ingest: ${codec}, the consumer and the best engine`);
      oursRuns[codec] ??= await ours(codec, 1);
      const o = oursRuns[codec];
      const tried: { config: EngineConfig; run: IngestRun & { copy: string } }[] = [];
      for (const [i, config] of finalists.entries()) {
        const run = await engine(topicOf(codec), total, productDb(codec), `best_${codec}_${i}`, config);
        await assertSameEvents(ch, `${productDb(codec)}.events`, run.copy);
        tried.push({ config, run });
      }
      const [winner, ...others] = tried.sort((a, b) => b.run.fromStart - a.run.fromStart);
      const e = winner!.run;
      const bestConfig = winner!.config;
      freshnessConfig ??= bestConfig;
      const topicName = codec === 'none' ? 'uncompressed topic' : `${codec} topic`;
      keep({ scenario: 'ingest', measure: `kafkajs consumer doing nothing, ${topicName}, ${count} events`, value: raw[codec]!, unit: 'events/s' });
      keep({
        scenario: 'ingest',
        measure: `Kafka engine at its best (${describeEngine(bestConfig)}), ${topicName}, ${count} events, from its start`,
        value: e.fromStart,
        unit: 'events/s',
        note: `${fmt(e.firstToLast)} events/s from its first stored row to its last; ${describeCpuPerEvent(e.cpu, total)}${others.map((o) => `; the other finalist (${describeEngine(o.config)}): ${fmt(o.run.fromStart)} events/s`).join('')}`,
      });
      const oursRows = (run: IngestRun & { rssMiB: number[] }, who: string) =>
        keep(
          {
            scenario: 'ingest',
            measure: `${who} into clickhouse-server, ${topicName}, ${count} events, from its start`,
            value: run.fromStart,
            unit: 'events/s',
            baseline: { name: 'Kafka engine at its best, from its start', value: e.fromStart },
            target: '≥ 1.25× the best Kafka engine, ≥ 100,000 events/s',
            note: `${describeCpuPerEvent(run.cpu, total)} against the engine's ${cpuMicrosPerEvent(e.cpu, total)} (${times(cpuMicrosPerEvent(run.cpu, total), cpuMicrosPerEvent(e.cpu, total))}); ${(run.fromStart / raw[codec]!).toFixed(2)} of raw kafkajs; RSS ${run.rssMiB.join(' + ')} MiB at the end`,
          },
          {
            scenario: 'ingest',
            measure: `${who} into clickhouse-server, ${topicName}, from its first stored row to its last`,
            value: run.firstToLast,
            unit: 'events/s',
            baseline: { name: 'Kafka engine at its best, first to last row', value: e.firstToLast },
            target: '≥ 1.25× the best Kafka engine, ≥ 100,000 events/s',
          },
        );
      // The single process's rows are kept before the group runs, so a failure there leaves them printed.
      oursRows(o, 'consumer process (ROLE=consumer)');
      const o2 = await ours(codec, GROUP_PROCESSES);
      await assertSameEvents(ch, `${productDb(codec)}_x${GROUP_PROCESSES}.events`, e.copy);
      oursRows(o2, `consumer group of ${GROUP_PROCESSES} processes (ROLE=consumer)`);
    }

    // 5. The server's ceiling: the same rows inserted already encoded.
    const ceiling = await preEncodedInsertRate({ url: ctx.clickhouseUrl, productDb: productDb('none'), db: `bench_ceiling_${ctx.run}`, events, batchSize });
    keep({ scenario: 'ingest', measure: `pre-encoded JSONEachRow insert into a copy of events, batches of ${batchSize.toLocaleString('en-US')}, one at a time`, value: ceiling, unit: 'events/s', note: `the consumer from its start: ${(oursRuns.none.fromStart / ceiling).toFixed(2)} of it` });

    // 6. Freshness: the same steady load for both, half the slower side's rate on the uncompressed topic.
    const e0 = rows.find((r) => r.measure.startsWith('Kafka engine at its best') && r.measure.includes('uncompressed'))!.value;
    const perSecond = Math.round(Math.min(oursRuns.none.fromStart, e0) / 2);
    const freshness = async (side: 'ours' | 'engine') => {
      const topic = `bench.ingest-fresh-${side}.${ctx.run}`;
      await createTopics(kafka, [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }]);
      const projectId = randomUUID();
      const db = `bench_fresh_${ctx.run}`;
      let table: string;
      let stop: () => Promise<void>;
      // Ours reports its own view of the same events: the histogram's change over the steady load.
      let histogram: (() => Promise<Map<number, number>>) | undefined;
      if (side === 'ours') {
        const consumer = await consumerProcess(topic, { CLICKHOUSE_URL: ctx.clickhouseUrl, CLICKHOUSE_DATABASE: db });
        table = `${db}.events`;
        stop = () => consumer.stop();
        histogram = () => visibleAgeBuckets(consumer.url);
      } else {
        const run = await startKafkaEngine(ch, { brokers: ctx.brokers, topic, productDb: productDb('none'), db: engineDb, name: 'fresh' }, freshnessConfig!);
        table = run.copy;
        stop = () => run.stop();
      }
      try {
        await produceWarmUp(kafka, topic, WARM_UP_EVENTS);
        await waitForRows(ch, table, WARM_UP_EVENTS, `${side} (warm-up)`);
        const before = await histogram?.();
        const sent = await producePaced(kafka, topic, { perSecond, seconds: freshnessSeconds, orgId, projectId });
        await waitForRows(ch, table, sent, `${side} (steady load)`, `project_id = '${projectId}'`);
        const after = await histogram?.();
        const own = before !== undefined && after !== undefined ? { p50: Math.round(quantileMs(before, after, 0.5)), p99: Math.round(quantileMs(before, after, 0.99)) } : undefined;
        return { sent, own, ...(await storedDelay(ch, table, `project_id = '${projectId}'`)) };
      } finally {
        await stop();
      }
    };
    // The producer shares the cores with the side it loads: what it reached is part of the figure.
    const reached = (sent: number) => `the producer reached ${fmt(Math.round(sent / freshnessSeconds))} events/s, ${((100 * sent) / (perSecond * freshnessSeconds)).toFixed(0)}% of the rate offered`;
    console.error(`  ingest: freshness at ${perSecond} events/s, the engine as ${describeEngine(freshnessConfig!)}`);
    const fo = await freshness('ours');
    const fe = await freshness('engine');
    keep({
      scenario: 'ingest',
      measure: `Kafka engine at its best (${describeEngine(freshnessConfig!)}), produce to visible at a steady ${perSecond.toLocaleString('en-US')} events/s for ${freshnessSeconds} s`,
      value: fe.sent,
      unit: 'events',
      p50Ms: fe.p50,
      p99Ms: fe.p99,
      note: reached(fe.sent),
    });
    keep({
      scenario: 'ingest',
      measure: `consumer process into clickhouse-server, produce to visible at a steady ${perSecond.toLocaleString('en-US')} events/s for ${freshnessSeconds} s`,
      value: fo.sent,
      unit: 'events',
      p50Ms: fo.p50,
      p99Ms: fo.p99,
      note: `${reached(fo.sent)}; p99 ${times(fo.p99, fe.p99)} the engine's`,
    });
    keep({
      scenario: 'ingest',
      measure: `consumer process's own freshness histogram (Kafka timestamp to the store's acknowledgement), at a steady ${perSecond.toLocaleString('en-US')} events/s for ${freshnessSeconds} s`,
      value: fo.sent,
      unit: 'events',
      p50Ms: fo.own?.p50 ?? NaN,
      p99Ms: fo.own?.p99 ?? NaN,
      note: 'ingest_visible_age_from_kafka_timestamp_seconds over the same events, read as histogram_quantile reads it (linear within a bucket): what /metrics and the feed-stale alert see, beside the table-timed row above',
    });

    // 7. The embedded shape (ROLE=all into chDB) on the uncompressed topic.
    const dataDir = mkdtempSync(join(tmpdir(), 'core-gateway-bench-ingest-'));
    try {
      const startedAt = Date.now();
      const group = `bench-ingest-chdb-${randomBytes(3).toString('hex')}`;
      const chdb = await consumerProcess(topicOf('none'), { DATA_DIR: join(dataDir, 'consumer') }, group, 'all');
      try {
        const rate = await chdbRate(kafka, group, topicOf('none'), total, startedAt);
        keep({
          scenario: 'ingest',
          measure: `ROLE=all process into chdb, uncompressed topic, ${count} events, from its start to the commit that covers every event`,
          value: rate,
          unit: 'events/s',
          baseline: { name: 'consumer into clickhouse-server, from its start', value: oursRuns.none.fromStart },
          target: '≥ 1 (as fast as into the server)',
          note: `RSS ${chdb.rssMiB()} MiB at the end`,
        });
      } finally {
        await chdb.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  } finally {
    await ch.command({ query: `DROP DATABASE IF EXISTS ${engineDb}` }).catch(() => undefined);
    await ch.close();
  }
  return rows;
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

/** chDB's table is inside the process: its progress is read from the group's committed offsets, polled every 100 ms. */
async function chdbRate(kafka: Kafka, groupId: string, topic: string, total: number, startedAt: number): Promise<number> {
  const last = await waitFor(`${groupId} to commit ${total} events`, async () => ((await committed(kafka, groupId, topic)) >= total ? Date.now() : undefined), 30 * 60_000, 100);
  return Math.round(total / ((last - startedAt) / 1000));
}
