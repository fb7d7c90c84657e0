import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { repoRoot } from '../../test/support/processes.js';

/** One load run as autocannon reports it; latencies in milliseconds. */
export interface LoadRun {
  readonly perSecond: number;
  readonly requests: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly p999Ms: number;
  /** The slowest answer: what one stall of the server under the load shows, where p99 of a long run hides it. */
  readonly maxMs: number;
  /** Connection errors and timeouts. */
  readonly errors: number;
  /** Answers outside 2xx (a 304 counts here too). */
  readonly non2xx: number;
  /** Cores' worth of CPU the load generator used, where it reports it (bench/support/fresh-key-load.ts). */
  readonly generatorCores?: number;
}

export interface LoadSpec {
  readonly url: string;
  readonly method?: 'GET' | 'POST' | 'PATCH';
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  readonly connections: number;
  readonly seconds: number;
}

const AUTOCANNON = resolve(repoRoot, 'node_modules', '.bin', 'autocannon');

interface AutocannonJson {
  readonly requests: { readonly average: number; readonly total: number };
  readonly latency: { readonly p50: number; readonly p99: number; readonly p99_9: number; readonly max: number };
  readonly errors: number;
  readonly timeouts: number;
  readonly non2xx: number;
  readonly generatorCores?: number;
}

/**
 * Runs autocannon as a process of its own, so that the load generator never shares an
 * event loop with what it measures (the bare Koa rate in the same run is its ceiling).
 */
export function autocannon(spec: LoadSpec): Promise<LoadRun> {
  const args = ['-j', '-c', String(spec.connections), '-d', String(spec.seconds), '-m', spec.method ?? 'GET'];
  for (const [name, value] of Object.entries(spec.headers ?? {})) args.push('-H', `${name}=${value}`);
  if (spec.body !== undefined) args.push('-b', spec.body);
  args.push(spec.url);
  return runLoad(AUTOCANNON, args);
}

/**
 * Like autocannon(), but each request takes the next of `urls` (GET, in turn, all on one
 * origin), through autocannon's API in a process of its own (bench/support/varied-load.ts).
 */
export async function variedAutocannon(spec: {
  readonly urls: readonly string[];
  /** The ORG-ID of each URL, in step with `urls`. */
  readonly orgIds?: readonly string[];
  readonly headers?: Readonly<Record<string, string>>;
  readonly connections: number;
  readonly seconds: number;
}): Promise<LoadRun> {
  const json = JSON.stringify({ urls: spec.urls, orgIds: spec.orgIds, headers: spec.headers ?? {}, connections: spec.connections, seconds: spec.seconds });
  // One argument holds at most 128 KiB on Linux: a long URL list goes through a file.
  const dir = mkdtempSync(join(tmpdir(), 'varied-load-'));
  const file = join(dir, 'spec.json');
  writeFileSync(file, json);
  try {
    return await runLoad(process.execPath, ['--import', 'tsx', resolve(repoRoot, 'bench', 'support', 'varied-load.ts'), `@${file}`]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Like autocannon(), but every `{uuid}` in the URL's path is a new UUID for each request
 * (bench/support/fresh-key-load.ts): a new device per enrollment, a new fleet per policy.
 */
export function freshKeyAutocannon(spec: LoadSpec & { readonly method: 'POST' | 'PATCH'; readonly body: string }): Promise<LoadRun> {
  const json = JSON.stringify({ url: spec.url, method: spec.method, headers: spec.headers ?? {}, body: spec.body, connections: spec.connections, seconds: spec.seconds });
  return runLoad(process.execPath, ['--import', 'tsx', resolve(repoRoot, 'bench', 'support', 'fresh-key-load.ts'), json]);
}

function runLoad(command: string, args: readonly string[]): Promise<LoadRun> {
  return new Promise((done, fail) => {
    execFile(command, args, { cwd: repoRoot, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error !== null) return fail(new Error(`autocannon failed: ${stderr || error.message}`));
      const report = JSON.parse(stdout) as AutocannonJson;
      done({
        perSecond: Math.round(report.requests.average),
        requests: report.requests.total,
        p50Ms: report.latency.p50,
        p99Ms: report.latency.p99,
        p999Ms: report.latency.p99_9,
        maxMs: report.latency.max,
        errors: report.errors + report.timeouts,
        non2xx: report.non2xx,
        ...(report.generatorCores === undefined ? {} : { generatorCores: report.generatorCores }),
      });
    });
  });
}
