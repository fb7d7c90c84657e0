import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../test/support/processes.js';
import { autocannon } from '../support/autocannon.js';
import { gatewayProcess, tsxProcess, type BenchProcess } from '../support/bench-process.js';
import { callerHeaders, type BenchContext } from '../support/context.js';
import { withCpu } from '../support/cpu-usage.js';
import type { Row } from '../support/results.js';
import { latencies } from './ceiling.js';
import { commandTopicEnvironment, commandTopicNames } from '../../test/support/command-topics.js';

const SETTLE_MS = 2000;
const PROJECTS = 100;

interface TailRun {
  readonly sent: number;
  readonly expected: number;
  readonly delivered: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly generatorCores: number;
  /** The delay split at the row's ingested_at: produce → stored (Kafka, batch wait, insert) and stored → received (the tail). */
  readonly toStored: DelayPart;
  readonly fromStored: DelayPart;
}

interface DelayPart {
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

async function storeReads(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(/^live_tail_store_reads_total\{[^}]*\} (\d+(?:\.\d+)?)$/gm)) sum += Number(m[1]);
  return sum;
}

/**
 * `tails` streams over 100 projects on the production shape (Kafka, the ClickHouse server,
 * one ROLE=all gateway) while `rate` events a second flow for the run's seconds; the
 * streams and the producer live in a process of their own (bench/support/tail-clients.ts).
 */
async function tailRun(ctx: BenchContext, tails: number, rate: number): Promise<{ run: TailRun; readsPerSecond: number; cores: number; rssMiB: number; idleRssMiB: number; baseRssMiB: number }> {
  const topic = `bench.tail-events.${ctx.run}.${tails}`;
  const gateway = await gatewayProcess({
    PORT: String(await freePort()),
    ROLE: 'all',
    KAFKA_BROKERS: ctx.brokers.join(','),
    KAFKA_CONSUMER_GROUP: `bench-tail-${ctx.run}-${tails}`,
    EVENTS_TOPICS: topic,
    ...commandTopicEnvironment(commandTopicNames((topic) => `bench.tail.${topic}.${ctx.run}`)),
    EVENTS_DLQ_TOPIC: `bench.tail-dlq.${ctx.run}`,
    CLICKHOUSE_URL: ctx.clickhouseUrl,
    CLICKHOUSE_DATABASE: `bench_tail_${ctx.run}_${tails}`,
    AUTH_JWT_SECRET: ctx.secret,
    CURSOR_SECRET: ctx.secret,
    LOG_LEVEL: 'warn',
    INGEST_BATCH_WAIT_MS: '100',
  });
  let clients: BenchProcess | undefined;
  try {
    const baseRssMiB = gateway.rssMiB();
    clients = tsxProcess('bench/support/tail-clients.ts', [
      JSON.stringify({ url: gateway.url, secret: ctx.secret, tails, projects: PROJECTS, brokers: ctx.brokers, topic, rate, seconds: ctx.seconds }),
    ]);
    await clients.waitForOutput(/^\{"opened".*\}$/m, 10 * 60_000);
    const idleRssMiB = gateway.rssMiB();
    const readsBefore = await storeReads(gateway.url);
    const started = performance.now();
    const [line, cpu] = await withCpu(gateway.pid, async () => (await clients!.waitForOutput(/^\{"sent".*\}$/m, 10 * 60_000))[0]);
    const seconds = (performance.now() - started) / 1000;
    const readsPerSecond = Number((((await storeReads(gateway.url)) - readsBefore) / seconds).toFixed(2));
    const run = JSON.parse(line) as TailRun;
    return { run, readsPerSecond, cores: Number(cpu.processCores.toFixed(2)), rssMiB: gateway.rssMiB(), idleRssMiB, baseRssMiB };
  } finally {
    await clients?.stop();
    await gateway.stop();
  }
}

/**
 * Another tenant's feed p99 with and without one caller holding every stream it may,
 * through one token naming fifty organizations (issue 35's measure), on a gateway given by `env`.
 */
async function fairness(ctx: BenchContext, name: string, env: Record<string, string>): Promise<Row> {
  const gateway = await gatewayProcess({ PORT: String(await freePort()), AUTH_JWT_SECRET: ctx.secret, CURSOR_SECRET: ctx.secret, LOG_LEVEL: 'warn', ...env });
  let holder: BenchProcess | undefined;
  try {
    const orgId = randomUUID();
    const url = `${gateway.url}/core/api/v1/projects/${randomUUID()}/events?limit=50`;
    const headers = await callerHeaders(ctx.secret, orgId);
    const seconds = Math.max(5, Math.round(ctx.seconds / 2));
    const alone = await autocannon({ url, headers, connections: 10, seconds });
    holder = tsxProcess('bench/support/tail-clients.ts', [JSON.stringify({ url: gateway.url, secret: ctx.secret, tails: 1000, projects: 50, oneCaller: true })]);
    const [opened] = await holder.waitForOutput(/^\{"opened".*\}$/m, 5 * 60_000);
    const held = JSON.parse(opened) as { opened: number; refused: number };
    const beside = await autocannon({ url, headers, connections: 10, seconds });
    return {
      scenario: 'tail',
      measure: `${name}: another tenant's feed, 10 connections, beside one caller asking for 1,000 streams over 50 organizations`,
      value: beside.p99Ms,
      unit: 'ms p99',
      ...latencies(beside),
      baseline: { name: 'feed p99 alone', value: alone.p99Ms },
      target: '≤ 2',
      note: `${held.opened} streams opened, ${held.refused} refused; ${beside.perSecond} vs ${alone.perSecond} pages/s`,
    };
  } finally {
    await holder?.stop();
    await gateway.stop();
  }
}

/** The live tail at dashboard scale (issue 29) and one caller's share of it (issue 35). */
export async function measureTail(ctx: BenchContext, counts: readonly number[], rate: number, withFairness = true): Promise<Row[]> {
  const rows: Row[] = [];
  if (withFairness) {
    const dataDir = mkdtempSync(join(tmpdir(), 'core-gateway-bench-tail-'));
    try {
      rows.push(await fairness(ctx, 'embedded default', { DATA_DIR: dataDir }));
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
    rows.push(await fairness(ctx, 'ClickHouse server', { CLICKHOUSE_URL: ctx.clickhouseUrl, CLICKHOUSE_DATABASE: `bench_tail_fair_${ctx.run}` }));
  }

  let base: Awaited<ReturnType<typeof tailRun>> | undefined;
  for (const tails of counts) {
    const r = await tailRun(ctx, tails, rate);
    base ??= r;
    const label = `${tails.toLocaleString('en-US')} tails over ${PROJECTS} projects, ${rate} events/s`;
    const perTailKiB = tails === 0 ? NaN : Math.round(((r.idleRssMiB - r.baseRssMiB) * 1024) / tails);
    rows.push(
      {
        scenario: 'tail',
        measure: `${label}: delivered / expected`,
        value: r.run.delivered,
        unit: 'deliveries',
        p50Ms: r.run.p50Ms,
        p99Ms: r.run.p99Ms,
        baseline: { name: 'expected', value: r.run.expected },
        target: '= 1',
        note: `delay from the produce, max ${r.run.maxMs} ms; load generator ${r.run.generatorCores} cores`,
      },
      {
        scenario: 'tail',
        measure: `${label}: delivery delay p99 from the produce`,
        value: r.run.p99Ms,
        unit: 'ms',
        p50Ms: r.run.p50Ms,
        p99Ms: r.run.p99Ms,
        baseline: { name: 'STREAM_SETTLE_MS + 1 s', value: SETTLE_MS + 1000 },
        target: '≤ 1',
        note: `produce → stored p50 / p99 ${r.run.toStored.p50Ms} / ${r.run.toStored.p99Ms} ms; stored → received ${r.run.fromStored.p50Ms} / ${r.run.fromStored.p99Ms} ms (max ${r.run.fromStored.maxMs})`,
      },
      {
        scenario: 'tail',
        measure: `${label}: live-tail store reads`,
        value: r.readsPerSecond,
        unit: 'reads/s',
        baseline: { name: `at ${counts[0]} tails`, value: base.readsPerSecond },
        target: '= 1',
        note: 'each read is a clock and a window query, and a copies query when rows came',
      },
      {
        scenario: 'tail',
        measure: `${label}: gateway CPU and RSS`,
        value: r.cores,
        unit: 'cores',
        baseline: { name: `at ${counts[0]} tails`, value: base.cores },
        note: `RSS ${r.rssMiB} MiB under load, ${r.idleRssMiB} MiB with the tails open and idle, ${r.baseRssMiB} MiB before: ${perTailKiB} KiB per idle tail`,
      },
    );
  }
  return rows;
}
