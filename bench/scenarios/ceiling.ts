import { freePort } from '../../test/support/processes.js';
import { autocannon, freshKeyAutocannon, type LoadRun } from '../support/autocannon.js';
import { tsxProcess } from '../support/bench-process.js';
import { describeCpu, withCpu, type CpuShares } from '../support/cpu-usage.js';
import type { Row } from '../support/results.js';

export interface Ceiling {
  readonly post50: LoadRun;
  readonly get50: LoadRun;
  readonly post200: LoadRun;
  /** The generator the command scenarios use, a new UUID in the path of every request, at 50 and 200 connections. */
  readonly freshPost50: LoadRun;
  readonly freshPost200: LoadRun;
}

/**
 * Bare Koa under autocannon: the ceiling of HTTP on this machine, and of the load
 * generator. Measured with each generator the scenarios use, after the same second of
 * warm-up the gateway gets.
 */
export async function measureCeiling(seconds: number): Promise<{ rows: Row[]; ceiling: Ceiling }> {
  const port = await freePort();
  const koa = tsxProcess('bench/support/bare-koa.ts', [String(port)]);
  try {
    await koa.waitForOutput(/ready/);
    const url = `http://127.0.0.1:${port}/`;
    const post = { url, method: 'POST' as const, headers: { 'content-type': 'application/json' }, body: '{"display_name":"Pump 7"}', seconds };
    const fresh = { ...post, url: `http://127.0.0.1:${port}/devices/{uuid}/enroll` };
    await autocannon({ ...post, connections: 50, seconds: 1 });
    await freshKeyAutocannon({ ...fresh, connections: 50, seconds: 1 });
    const post50 = await autocannon({ ...post, connections: 50 });
    const get50 = await autocannon({ url, seconds, connections: 50 });
    const post200 = await autocannon({ ...post, connections: 200 });
    const [freshPost50, cpu50] = await withCpu(koa.pid, () => freshKeyAutocannon({ ...fresh, connections: 50 }));
    const [freshPost200, cpu200] = await withCpu(koa.pid, () => freshKeyAutocannon({ ...fresh, connections: 200 }));
    const row = (measure: string, run: LoadRun, note?: string): Row => ({ scenario: 'bare Koa', measure, value: run.perSecond, unit: 'req/s', ...latencies(run), note });
    return {
      rows: [
        row('POST, 50 connections', post50),
        row('GET, 50 connections', get50),
        row('POST, 200 connections', post200),
        row('POST, a new UUID in the path of each request, 50 connections', freshPost50, cpuNote(freshPost50, cpu50)),
        row('POST, a new UUID in the path of each request, 200 connections', freshPost200, cpuNote(freshPost200, cpu200)),
      ],
      ceiling: { post50, get50, post200, freshPost50, freshPost200 },
    };
  } finally {
    await koa.stop();
  }
}

/** Bare Koa's own CPU and the generator's: an event loop at about one core with the generator short of one is the HTTP ceiling, not the generator's. */
const cpuNote = (run: LoadRun, shares: CpuShares) => describeCpu('bare Koa', shares, run, { broker: false });

export const latencies = (run: LoadRun) => ({ p50Ms: run.p50Ms, p99Ms: run.p99Ms, p999Ms: run.p999Ms, errors: run.errors + run.non2xx });
