import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createClient } from '@clickhouse/client';
import { Kafka, logLevel } from 'kafkajs';
import { commandTopicEnvironment, commandTopicNames } from '../../test/support/command-topics.js';
import { createTopics } from '../../test/support/kafka-topics.js';
import { parseMetrics, samplesOf } from '../../test/support/metrics-text.js';
import { freePort } from '../../test/support/processes.js';
import { gatewayProcess } from '../support/bench-process.js';
import { telemetry } from '../support/bench-events.js';
import type { BenchContext } from '../support/context.js';
import type { Row } from '../support/results.js';
import { ingestTiming, mergesSettled, waitForRows } from '../support/stored-rows.js';

const PARTITIONS = 6;
/** Events made and sent at a time: 2M canonical events as objects would take gigabytes of the bench's own heap. */
const PRODUCE_CHUNK = 50_000;
const PRODUCE_BATCH = 5_000;
/** How often the consumer's /metrics is read for its heap and its buffers while it drains. */
const SAMPLE_MS = 500;
/** The bound on the draining process's peak RSS. */
const RSS_TARGET_MIB = 512;
/**
 * The largest INGEST_MAX_BUFFERED_BYTES accepts: the budget as good as off, so fetching is
 * bounded only by the in-flight bounds of before it (the baseline of the same run).
 */
const UNBOUNDED = String(8 * 1024 * 1024 * 1024);

/** Writes `total` telemetry events to a new topic of PARTITIONS partitions, a chunk at a time. */
async function produceBacklog(kafka: Kafka, topic: string, total: number): Promise<void> {
  await createTopics(kafka, [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }]);
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  try {
    const orgId = randomUUID();
    const projectId = randomUUID();
    const start = Date.parse('2026-01-01T00:00:00Z');
    for (let done = 0; done < total; done += PRODUCE_CHUNK) {
      const events = telemetry(Math.min(PRODUCE_CHUNK, total - done), orgId, projectId, start + done);
      const sends: Promise<unknown>[] = [];
      for (let i = 0; i < events.length; i += PRODUCE_BATCH) {
        const messages = events.slice(i, i + PRODUCE_BATCH).map((e) => ({ key: e.device_id ?? null, value: JSON.stringify(e) }));
        sends.push(producer.send({ topic, acks: -1, messages }));
      }
      await Promise.all(sends);
    }
  } finally {
    await producer.disconnect();
  }
}

/** What /proc says of a process's memory: its peak resident set (VmHWM) is the figure the issue bounds. */
function peakRssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024);
}

/** The largest of each of the process's own memory gauges seen while it drained, in MiB. */
interface MemoryPeaks {
  heapUsed: number;
  heapTotal: number;
  external: number;
}

/** Reads the consumer's heap and external-buffer gauges (prom-client's default metrics) every SAMPLE_MS, keeping the largest. */
function sampleMemory(url: string): { stop(): MemoryPeaks } {
  const peaks: MemoryPeaks = { heapUsed: 0, heapTotal: 0, external: 0 };
  const mib = (bytes: number) => Math.round(bytes / (1024 * 1024));
  const read = async () => {
    const res = await fetch(`${url}/metrics`).catch(() => undefined);
    if (res?.ok !== true) return;
    const metrics = parseMetrics(await res.text());
    const one = (name: string) => samplesOf(metrics, name)[0]?.value ?? 0;
    peaks.heapUsed = Math.max(peaks.heapUsed, mib(one('nodejs_heap_size_used_bytes')));
    peaks.heapTotal = Math.max(peaks.heapTotal, mib(one('nodejs_heap_size_total_bytes')));
    peaks.external = Math.max(peaks.external, mib(one('nodejs_external_memory_bytes')));
  };
  const timer = setInterval(() => void read(), SAMPLE_MS);
  return {
    stop() {
      clearInterval(timer);
      return peaks;
    },
  };
}

interface Drain {
  readonly label: string;
  readonly fromStart: number;
  readonly firstToLast: number;
  readonly peakMiB: number;
  readonly peaks: MemoryPeaks;
}

/**
 * Memory on a backlog (issue 54, item 5). BACKLOG events of telemetry (about 450 bytes
 * each, uncompressed) are written to a topic of six partitions before any consumer starts;
 * then a consumer process (ROLE=consumer, `dist/src/main.js`, into the ClickHouse server)
 * is started on it and drains it, timed from its spawn to its last stored row. Its peak
 * resident set is read from /proc (VmHWM) once every event is stored, before it stops;
 * its heap and external buffers are sampled from its /metrics meanwhile. Each round drains
 * the topic twice into databases of their own, once with the byte budget as configured
 * (INGEST_MAX_BUFFERED_BYTES unset: its default) and once with the budget as good as off
 * (the baseline, what the consumer did before it), alternating which goes first, each on a
 * server at rest. Rows: the default's peak RSS against the baseline's, and its drain rate
 * against the baseline's, each the mean of the rounds with every run in the note.
 */
export async function measureBacklog(ctx: BenchContext, total: number, rounds: number, batchSize: number): Promise<Row[]> {
  const kafka = new Kafka({ clientId: 'bench-backlog', brokers: [...ctx.brokers], logLevel: logLevel.NOTHING });
  const ch = createClient({ url: ctx.clickhouseUrl });
  const topic = `bench.backlog.${ctx.run}`;
  const count = total.toLocaleString('en-US');
  try {
    console.error(`  backlog: producing ${count} events`);
    await produceBacklog(kafka, topic, total);
    const drain = async (label: string, extra: Record<string, string>, n: number): Promise<Drain> => {
      await mergesSettled(ch);
      const db = `bench_backlog_${label}_${n}_${ctx.run}`;
      const startedAt = Date.now();
      const consumer = await gatewayProcess({
        KAFKA_BROKERS: ctx.brokers.join(','),
        CLICKHOUSE_URL: ctx.clickhouseUrl,
        CLICKHOUSE_DATABASE: db,
        AUTH_JWT_SECRET: ctx.secret,
        ...commandTopicEnvironment(commandTopicNames((t) => `bench.backlog.${t}.${ctx.run}`)),
        EVENTS_DLQ_TOPIC: `bench.backlog-dlq.${ctx.run}`,
        EVENTS_TOPICS: topic,
        ROLE: 'consumer',
        PORT: String(await freePort()),
        KAFKA_CONSUMER_GROUP: `bench-backlog-${randomBytes(3).toString('hex')}`,
        INGEST_BATCH_SIZE: String(batchSize),
        ...extra,
      });
      const sampler = sampleMemory(consumer.url);
      try {
        await waitForRows(ch, `${db}.events`, total, `the consumer (${label})`);
        const peakMiB = peakRssMiB(consumer.pid);
        const peaks = sampler.stop();
        const timing = await ingestTiming(ch, `${db}.events`, total, startedAt);
        const run = { label, fromStart: timing.fromStart, firstToLast: timing.firstToLast, peakMiB, peaks };
        console.error(`    ${label}: ${run.fromStart} events/s from its start, peak RSS ${peakMiB} MiB (heap used ≤ ${peaks.heapUsed}, heap ≤ ${peaks.heapTotal}, external ≤ ${peaks.external} MiB)`);
        return run;
      } finally {
        sampler.stop();
        await consumer.stop();
        await ch.command({ query: `DROP DATABASE IF EXISTS ${db}` }).catch(() => undefined);
      }
    };
    const budgeted: Drain[] = [];
    const unbounded: Drain[] = [];
    for (let round = 0; round < rounds; round += 1) {
      // Alternating which goes first, so a machine that speeds up or slows down during the run favours neither.
      const order = round % 2 === 0 ? (['unbounded', 'budget'] as const) : (['budget', 'unbounded'] as const);
      for (const which of order) {
        if (which === 'budget') budgeted.push(await drain('budget', {}, round));
        else unbounded.push(await drain('unbounded', { INGEST_MAX_BUFFERED_BYTES: UNBOUNDED }, round));
      }
    }
    const mean = (runs: readonly Drain[], of: (d: Drain) => number) => Math.round(runs.reduce((sum, d) => sum + of(d), 0) / runs.length);
    const each = (runs: readonly Drain[], of: (d: Drain) => number, unit: string) => runs.map((d) => `${of(d).toLocaleString('en-US')}${unit}`).join(', ');
    const memory = (runs: readonly Drain[]) =>
      runs.map((d) => `heap used ≤ ${d.peaks.heapUsed}, heap ≤ ${d.peaks.heapTotal}, external ≤ ${d.peaks.external} MiB`).join('; ');
    const who = `consumer process (ROLE=consumer) draining a backlog of ${count} events into clickhouse-server`;
    return [
      {
        scenario: 'backlog',
        measure: `${who}, INGEST_MAX_BUFFERED_BYTES at its default: peak RSS (VmHWM)`,
        value: mean(budgeted, (d) => d.peakMiB),
        unit: 'MiB',
        baseline: { name: 'the same with the budget off', value: mean(unbounded, (d) => d.peakMiB) },
        target: `≤ ${RSS_TARGET_MIB} MiB`,
        note: `${rounds} round(s): ${each(budgeted, (d) => d.peakMiB, ' MiB')} against ${each(unbounded, (d) => d.peakMiB, ' MiB')} off; budget: ${memory(budgeted)}; off: ${memory(unbounded)}`,
      },
      {
        scenario: 'backlog',
        measure: `${who}, INGEST_MAX_BUFFERED_BYTES at its default: drain rate from its start`,
        value: mean(budgeted, (d) => d.fromStart),
        unit: 'events/s',
        baseline: { name: 'the same with the budget off', value: mean(unbounded, (d) => d.fromStart) },
        target: '≥ 1 (no loss of drain rate)',
        note: `${rounds} round(s): ${each(budgeted, (d) => d.fromStart, '')} against ${each(unbounded, (d) => d.fromStart, '')} off; from the first stored row to the last ${each(budgeted, (d) => d.firstToLast, '')} against ${each(unbounded, (d) => d.firstToLast, '')}`,
      },
    ];
  } finally {
    await ch.close();
  }
}
