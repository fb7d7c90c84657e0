import { Agent, request } from 'node:http';

export interface LoadResult {
  readonly requests: number;
  readonly errors: number;
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** CPU time of this process (server and load generator together) per wall-clock second, in percent of one core. */
  readonly processCpuPercent: number;
}

export interface LoadOptions {
  readonly url: string;
  readonly method?: string;
  readonly headers?: Record<string, string>;
  /** Builds each request's body and path suffix; called once per request. */
  readonly next?: () => { path?: string; body?: string };
  readonly concurrency: number;
  readonly durationMs: number;
  /** Status that counts as success. */
  readonly expectStatus: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** p50 and p99 of latencies in milliseconds, rounded to hundredths; sorts the array in place. */
export function summarizeLatencies(latencies: number[]): { p50Ms: number; p99Ms: number } {
  latencies.sort((a, b) => a - b);
  return { p50Ms: Number(percentile(latencies, 50).toFixed(2)), p99Ms: Number(percentile(latencies, 99).toFixed(2)) };
}

/** A closed-loop load generator on keep-alive connections: `concurrency` callers, each sending its next request when the last one answered. */
export async function load(options: LoadOptions): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: options.concurrency });
  const latencies: number[] = [];
  let errors = 0;
  const deadline = Date.now() + options.durationMs;
  const started = Date.now();
  const cpuBefore = process.cpuUsage();

  const once = () =>
    new Promise<void>((done) => {
      const { path = '', body } = options.next?.() ?? {};
      const t0 = process.hrtime.bigint();
      const req = request(options.url + path, { method: options.method ?? 'GET', agent, headers: options.headers }, (res) => {
        res.resume();
        res.on('end', () => {
          latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
          if (res.statusCode !== options.expectStatus) errors += 1;
          done();
        });
      });
      req.on('error', () => {
        errors += 1;
        done();
      });
      if (body !== undefined) req.end(body);
      else req.end();
    });

  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      while (Date.now() < deadline) await once();
    }),
  );
  const elapsed = (Date.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  agent.destroy();
  return {
    requests: latencies.length,
    errors,
    perSecond: Math.round(latencies.length / elapsed),
    ...summarizeLatencies(latencies),
    processCpuPercent: Math.round(((cpu.user + cpu.system) / 1e6 / elapsed) * 100),
  };
}
