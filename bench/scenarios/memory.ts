import { randomUUID } from 'node:crypto';
import { freePort } from '../../test/support/processes.js';
import { autocannon } from '../support/autocannon.js';
import { gatewayProcess, type BenchProcess } from '../support/bench-process.js';
import { callerHeaders, type BenchContext } from '../support/context.js';
import type { Row } from '../support/results.js';
import { startKafkaGateway } from './commands.js';

interface RssTrace {
  readonly start: number;
  peak: number;
  end: number;
}

function trace(proc: BenchProcess): { stop(): RssTrace } {
  const start = proc.rssMiB();
  const seen: RssTrace = { start, peak: start, end: start };
  const timer = setInterval(() => {
    seen.end = proc.rssMiB();
    seen.peak = Math.max(seen.peak, seen.end);
  }, 5_000);
  return {
    stop() {
      clearInterval(timer);
      seen.end = proc.rssMiB();
      seen.peak = Math.max(seen.peak, seen.end);
      return seen;
    },
  };
}

/** RSS of a gateway process and a consumer process over `seconds` of enrollments at 50 connections. */
export async function measureMemory(ctx: BenchContext, seconds: number): Promise<Row[]> {
  const { gateway, topics } = await startKafkaGateway(ctx, 'memory');
  const consumer = await gatewayProcess({
    ROLE: 'consumer',
    PORT: String(await freePort()),
    KAFKA_BROKERS: ctx.brokers.join(','),
    CLICKHOUSE_URL: ctx.clickhouseUrl,
    CLICKHOUSE_DATABASE: `bench_memory_${ctx.run}`,
    AUTH_JWT_SECRET: ctx.secret,
    KAFKA_CONSUMER_GROUP: `bench-memory-${ctx.run}`,
    ...topics,
  });
  try {
    const headers = await callerHeaders(ctx.secret, randomUUID());
    const gatewayRss = trace(gateway);
    const consumerRss = trace(consumer);
    const run = await autocannon({
      url: `${gateway.url}/core/api/v1/projects/${randomUUID()}/fleets/${randomUUID()}/devices/${randomUUID()}/enroll`,
      method: 'POST',
      headers,
      body: '{"display_name":"Pump 7"}',
      connections: 50,
      seconds,
    });
    const g = gatewayRss.stop();
    const c = consumerRss.stop();
    const row = (who: string, t: RssTrace): Row => ({
      scenario: 'memory',
      measure: `${who} RSS over ${seconds} s of enrollments (${run.perSecond} req/s)`,
      value: t.peak,
      unit: 'MiB peak',
      note: `start ${t.start} MiB, end ${t.end} MiB`,
    });
    return [row('gateway', g), row('consumer', c)];
  } finally {
    await consumer.stop();
    await gateway.stop();
  }
}
