import { randomUUID } from 'node:crypto';
import { freePort } from '../../test/support/processes.js';
import { autocannon, type LoadRun } from '../support/autocannon.js';
import { gatewayProcess, tsxProcess } from '../support/bench-process.js';
import { callerHeaders, type BenchContext } from '../support/context.js';
import type { Row } from '../support/results.js';
import { latencies } from './ceiling.js';

/** A gateway process (ROLE=gateway) on the run's broker and ClickHouse server, with topics of its own. */
export async function startKafkaGateway(ctx: BenchContext, name: string) {
  const topics = {
    EVENTS_TOPICS: `bench.events.${name}.${ctx.run}`,
    ENROLLMENT_COMMANDS_TOPIC: `bench.enrollments.${name}.${ctx.run}`,
    EDGE_POLICY_COMMANDS_TOPIC: `bench.edge-policy.${name}.${ctx.run}`,
    EVENTS_DLQ_TOPIC: `bench.dlq.${name}.${ctx.run}`,
  };
  const gateway = await gatewayProcess({
    ROLE: 'gateway',
    PORT: String(await freePort()),
    KAFKA_BROKERS: ctx.brokers.join(','),
    CLICKHOUSE_URL: ctx.clickhouseUrl,
    CLICKHOUSE_DATABASE: `bench_${name.replace(/\W/g, '_')}_${ctx.run}`,
    AUTH_JWT_SECRET: ctx.secret,
    CURSOR_SECRET: ctx.secret,
    KAFKA_TOPIC_PARTITIONS: '6',
    KAFKA_CONSUMER_GROUP: `bench-ingest-${name}-${ctx.run}`,
    ...topics,
  });
  return { gateway, topics };
}

async function rawSends(ctx: BenchContext, topic: string, connections: number): Promise<LoadRun> {
  const producer = tsxProcess('bench/support/raw-producer.ts', [ctx.brokers.join(','), topic, String(connections), String(ctx.seconds)]);
  const [line] = await producer.waitForOutput(/^\{.*\}$/m, (ctx.seconds + 60) * 1000);
  await producer.exited;
  const run = JSON.parse(line) as LoadRun;
  return { ...run, non2xx: 0 };
}

/** The gateway's sends so far and their summed time (kafka_produce_duration_seconds), over every topic. */
async function produceTotals(url: string): Promise<{ sends: number; seconds: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const sum = (name: string) =>
    text
      .split('\n')
      .filter((line) => line.startsWith(`${name}{`))
      .reduce((total, line) => total + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
  return { sends: sum('kafka_produce_duration_seconds_count'), seconds: sum('kafka_produce_duration_seconds_sum') };
}

/** Load on one route, noting how many requests shared a send and how long a send took. */
async function commandRun(gatewayUrl: string, options: Parameters<typeof autocannon>[0]): Promise<{ run: LoadRun; sharing: string }> {
  const before = await produceTotals(gatewayUrl);
  const run = await autocannon(options);
  const after = await produceTotals(gatewayUrl);
  const sends = after.sends - before.sends;
  const perSend = sends === 0 ? 0 : run.requests / sends;
  const sendMs = sends === 0 ? 0 : ((after.seconds - before.seconds) / sends) * 1000;
  return { run, sharing: `${perSend.toFixed(1)} requests per send, ${sendMs.toFixed(1)} ms per send` };
}

/**
 * Enroll and edge-policy through Kafka (202 or 200 only after all in-sync replicas
 * acknowledged), at 50 and 200 connections, against bare Koa and against kafkajs sending
 * one acks=-1 message per call at the same concurrency, all in this run.
 */
export async function measureCommands(ctx: BenchContext): Promise<Row[]> {
  const { gateway, topics } = await startKafkaGateway(ctx, 'commands');
  const rows: Row[] = [];
  try {
    const orgId = randomUUID();
    const projectId = randomUUID();
    const headers = await callerHeaders(ctx.secret, orgId);
    const api = `${gateway.url}/core/api/v1/projects/${projectId}/fleets/${randomUUID()}`;
    const enrollUrl = `${api}/devices/${randomUUID()}/enroll`;
    for (const connections of [50, 200] as const) {
      const koa = connections === 50 ? ctx.ceiling.post50 : ctx.ceiling.post200;
      const raw = await rawSends(ctx, topics.ENROLLMENT_COMMANDS_TOPIC, connections);
      if (connections === 50) {
        // One second of each route first: without it the first route measured carried the
        // gateway's JIT warm-up in its tail.
        await autocannon({ url: enrollUrl, method: 'POST', headers, body: '{"display_name":"Pump 7"}', connections, seconds: 1 });
        await autocannon({ url: `${api}/edge/policy`, method: 'PATCH', headers, body: '{"sync":{"every_s":60}}', connections, seconds: 1 });
      }
      rows.push({ scenario: 'kafkajs raw sends', measure: `acks=-1, one message per call, ${connections} in flight`, value: raw.perSecond, unit: 'msg/s', ...latencies(raw) });
      const enroll = await commandRun(gateway.url, { url: enrollUrl, method: 'POST', headers, body: '{"display_name":"Pump 7"}', connections, seconds: ctx.seconds });
      const policy = await commandRun(gateway.url, { url: `${api}/edge/policy`, method: 'PATCH', headers, body: '{"sync":{"every_s":60}}', connections, seconds: ctx.seconds });
      for (const [measure, { run, sharing }] of [
        [`enroll, ${connections} connections`, enroll],
        [`edge-policy, ${connections} connections`, policy],
      ] as const) {
        rows.push({
          scenario: 'commands through Kafka',
          measure,
          value: run.perSecond,
          unit: 'req/s',
          ...latencies(run),
          baseline: { name: `bare Koa POST ${connections}`, value: koa.perSecond },
          target: connections === 50 ? '≥ 0.15 of bare Koa, p99 ≤ 25 ms' : undefined,
          note: `${(run.perSecond / raw.perSecond).toFixed(2)}× raw sends; ${sharing}`,
        });
      }
    }
    return rows;
  } finally {
    await gateway.stop();
  }
}
