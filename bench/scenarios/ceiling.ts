import { freePort } from '../../test/support/processes.js';
import { autocannon, type LoadRun } from '../support/autocannon.js';
import { tsxProcess } from '../support/bench-process.js';
import type { Row } from '../support/results.js';

/** Bare Koa under autocannon: the ceiling of HTTP on this machine, and of the load generator. */
export async function measureCeiling(seconds: number): Promise<{ rows: Row[]; ceiling: { post50: LoadRun; get50: LoadRun; post200: LoadRun } }> {
  const port = await freePort();
  const koa = tsxProcess('bench/support/bare-koa.ts', [String(port)]);
  try {
    await koa.waitForOutput(/ready/);
    const url = `http://127.0.0.1:${port}/`;
    const post = { url, method: 'POST' as const, headers: { 'content-type': 'application/json' }, body: '{"display_name":"Pump 7"}', seconds };
    const post50 = await autocannon({ ...post, connections: 50 });
    const get50 = await autocannon({ url, seconds, connections: 50 });
    const post200 = await autocannon({ ...post, connections: 200 });
    const row = (measure: string, run: LoadRun): Row => ({ scenario: 'bare Koa', measure, value: run.perSecond, unit: 'req/s', ...latencies(run) });
    return { rows: [row('POST, 50 connections', post50), row('GET, 50 connections', get50), row('POST, 200 connections', post200)], ceiling: { post50, get50, post200 } };
  } finally {
    await koa.stop();
  }
}

export const latencies = (run: LoadRun) => ({ p50Ms: run.p50Ms, p99Ms: run.p99Ms, p999Ms: run.p999Ms, errors: run.errors + run.non2xx });
