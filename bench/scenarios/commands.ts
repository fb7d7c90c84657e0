import { randomUUID } from 'node:crypto';
import { freePort } from '../../test/support/processes.js';
import { autocannon, freshKeyAutocannon, type LoadRun } from '../support/autocannon.js';
import { gatewayProcess, tsxProcess } from '../support/bench-process.js';
import { callerHeaders, type BenchContext } from '../support/context.js';
import { describeCpu, withCpu } from '../support/cpu-usage.js';
import type { Row } from '../support/results.js';
import { latencies } from './ceiling.js';
import { commandTopicEnvironment, commandTopicNames } from '../../test/support/command-topics.js';

/** A gateway process (ROLE=gateway unless `role` says otherwise) on the run's broker and ClickHouse server, with topics of its own. */
export async function startKafkaGateway(ctx: BenchContext, name: string, role: 'gateway' | 'all' = 'gateway') {
  const commands = commandTopicNames((topic) => `bench.${topic}.${name}.${ctx.run}`);
  const topics = {
    EVENTS_TOPICS: `bench.events.${name}.${ctx.run}`,
    ...commandTopicEnvironment(commands),
    EVENTS_DLQ_TOPIC: `bench.dlq.${name}.${ctx.run}`,
  };
  const gateway = await gatewayProcess({
    ROLE: role,
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
  return { gateway, topics, commands };
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

/**
 * Load on one route, noting how many requests shared a send, how long a send took, and
 * where the CPU went meanwhile: the gateway's process (its event loop is one core), the
 * broker, the load generator and the whole machine.
 */
async function commandRun(gateway: { readonly url: string; readonly pid: number }, load: () => Promise<LoadRun>): Promise<{ run: LoadRun; sharing: string }> {
  const before = await produceTotals(gateway.url);
  const [run, shares] = await withCpu(gateway.pid, load);
  const after = await produceTotals(gateway.url);
  const sends = after.sends - before.sends;
  const perSend = sends === 0 ? 0 : run.requests / sends;
  const sendMs = sends === 0 ? 0 : ((after.seconds - before.seconds) / sends) * 1000;
  return { run, sharing: `${perSend.toFixed(1)} requests per send, ${sendMs.toFixed(1)} ms per send; ${describeCpu('gateway', shares, run, { broker: true })}` };
}

const ENROLL_BODY = '{"display_name":"Pump 7"}';
const POLICY_BODY = '{"sync":{"every_s":60}}';

/** The two command routes of one project, each request naming a new device (enroll) or a new fleet (edge policy). */
async function routes(ctx: BenchContext, gatewayUrl: string) {
  const orgId = randomUUID();
  const headers = await callerHeaders(ctx.secret, orgId);
  const project = `${gatewayUrl}/core/api/v1/projects/${randomUUID()}`;
  const fleet = randomUUID();
  return {
    enroll: (connections: number, seconds = ctx.seconds) =>
      freshKeyAutocannon({ url: `${project}/fleets/${fleet}/devices/{uuid}/enroll`, method: 'POST', headers, body: ENROLL_BODY, connections, seconds }),
    policy: (connections: number, seconds = ctx.seconds) =>
      freshKeyAutocannon({ url: `${project}/fleets/{uuid}/edge/policy`, method: 'PATCH', headers, body: POLICY_BODY, connections, seconds }),
    /** Every request on one device: one Kafka key, as the bench measured before it sent what users send. */
    enrollOneKey: (connections: number) =>
      autocannon({ url: `${project}/fleets/${fleet}/devices/${randomUUID()}/enroll`, method: 'POST', headers, body: ENROLL_BODY, connections, seconds: ctx.seconds }),
  };
}

/**
 * Enroll and edge-policy through Kafka (202 or 200 only after all in-sync replicas
 * acknowledged), every request naming a new device or fleet, the gateway at its default
 * LOG_LEVEL: ROLE=gateway at 50 and 200 connections, then ROLE=all (its consumer storing
 * the commands' events meanwhile) at 50. Read against bare Koa under the same generator
 * and against kafkajs sending one acks=-1 message per call at the same concurrency, all
 * in this run. Requests per Kafka send and milliseconds per send are the gateway's own
 * /metrics; every enrollment on one device (one Kafka key, as the bench measured before)
 * is a row of its own.
 */
export async function measureCommands(ctx: BenchContext): Promise<Row[]> {
  const rows: Row[] = [];
  const commandRow = (measure: string, { run, sharing }: { run: LoadRun; sharing: string }, koa: { name: string; run: LoadRun }, raw: LoadRun, target?: string): Row => ({
    scenario: 'commands through Kafka',
    measure,
    value: run.perSecond,
    unit: 'req/s',
    ...latencies(run),
    baseline: { name: koa.name, value: koa.run.perSecond },
    target,
    note: `${(run.perSecond / raw.perSecond).toFixed(2)}× raw sends; ${sharing}`,
  });
  const koa50 = { name: 'bare Koa POST 50, new UUID per request', run: ctx.ceiling.freshPost50 };
  const koa200 = { name: 'bare Koa POST 200, new UUID per request', run: ctx.ceiling.freshPost200 };

  const { gateway, commands } = await startKafkaGateway(ctx, 'commands');
  let raw50: LoadRun;
  try {
    const route = await routes(ctx, gateway.url);
    // One second of each route first, as bare Koa had: without it the first route measured carried the gateway's JIT warm-up in its tail.
    await route.enroll(50, 1);
    await route.policy(50, 1);
    for (const connections of [50, 200] as const) {
      const raw = await rawSends(ctx, commands.enrollmentCommands, connections);
      if (connections === 50) raw50 = raw;
      rows.push({ scenario: 'kafkajs raw sends', measure: `acks=-1, one message per call, ${connections} in flight`, value: raw.perSecond, unit: 'msg/s', ...latencies(raw) });
      const koa = connections === 50 ? koa50 : koa200;
      const target = connections === 50 ? '≥ 0.4 of bare Koa, p99 ≤ 25 ms' : 'no errors, p99 ≤ 60 ms';
      const enroll = await commandRun(gateway, () => route.enroll(connections));
      rows.push(commandRow(`ROLE=gateway, enroll, a new device per request, ${connections} connections`, enroll, koa, raw, target));
      const policy = await commandRun(gateway, () => route.policy(connections));
      rows.push(commandRow(`ROLE=gateway, edge-policy, a new fleet per request, ${connections} connections`, policy, koa, raw, target));
    }
    const oneKey = await commandRun(gateway, () => route.enrollOneKey(50));
    rows.push(commandRow('ROLE=gateway, enroll, every request on one device, 50 connections', oneKey, { name: 'bare Koa POST 50', run: ctx.ceiling.post50 }, raw50!));
  } finally {
    await gateway.stop();
  }

  const all = await startKafkaGateway(ctx, 'commands-all', 'all');
  try {
    const route = await routes(ctx, all.gateway.url);
    await route.enroll(50, 1);
    await route.policy(50, 1);
    const enroll = await commandRun(all.gateway, () => route.enroll(50));
    rows.push(commandRow('ROLE=all (its consumer storing the events), enroll, a new device per request, 50 connections', enroll, koa50, raw50!, '≥ 0.3 of bare Koa, p99 ≤ 40 ms'));
    const policy = await commandRun(all.gateway, () => route.policy(50));
    rows.push(commandRow('ROLE=all (its consumer storing the events), edge-policy, a new fleet per request, 50 connections', policy, koa50, raw50!, '≥ 0.3 of bare Koa, p99 ≤ 40 ms'));
  } finally {
    await all.gateway.stop();
  }
  return rows;
}
