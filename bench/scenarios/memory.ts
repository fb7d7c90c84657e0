import { randomUUID } from 'node:crypto';
import { freePort } from '../../test/support/processes.js';
import { autocannon } from '../support/autocannon.js';
import { gatewayProcess, type BenchProcess } from '../support/bench-process.js';
import { callerHeaders, type BenchContext } from '../support/context.js';
import type { Row } from '../support/results.js';
import { startKafkaGateway } from './commands.js';

/** RSS samples of one process under load, every SAMPLE_MS. */
interface RssTrace {
  /** Before any load: the idle process. */
  readonly idle: number;
  readonly samples: { readonly atS: number; readonly mib: number }[];
}

const SAMPLE_MS = 5_000;
/**
 * Growth is counted from the first minute of load on: until then the heap and the
 * buffers grow to the working set that the load needs, which is not a leak. The figure
 * from the idle process is in the note beside it.
 */
const WARM_UP_S = 60;

function trace(proc: BenchProcess): { stop(): RssTrace } {
  const started = Date.now();
  const seen: RssTrace = { idle: proc.rssMiB(), samples: [] };
  const sample = () => seen.samples.push({ atS: Math.round((Date.now() - started) / 1000), mib: proc.rssMiB() });
  const timer = setInterval(sample, SAMPLE_MS);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return seen;
    },
  };
}

function growthRow(who: string, t: RssTrace, seconds: number, perSecond: number): Row {
  const warm = t.samples.find((s) => s.atS >= Math.min(WARM_UP_S, seconds / 2)) ?? t.samples[0]!;
  const end = t.samples.at(-1)!;
  const peak = Math.max(...t.samples.map((s) => s.mib));
  const growth = ((end.mib - warm.mib) / warm.mib) * 100;
  return {
    scenario: 'memory',
    measure: `${who} RSS growth from ${warm.atS} s to ${end.atS} s of enrollments (${perSecond} req/s)`,
    value: Math.round(growth * 10) / 10,
    unit: '%',
    target: '≤ 10%',
    note: `idle ${t.idle} MiB, ${warm.mib} MiB at ${warm.atS} s, ${end.mib} MiB at the end, peak ${peak} MiB`,
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
    return [growthRow('gateway', gatewayRss.stop(), seconds, run.perSecond), growthRow('consumer', consumerRss.stop(), seconds, run.perSecond)];
  } finally {
    await consumer.stop();
    await gateway.stop();
  }
}
