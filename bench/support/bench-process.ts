import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, repoRoot } from '../../test/support/processes.js';
import { waitFor } from '../../test/support/wait-for.js';
import type { BenchContext } from './context.js';

export const PROFILE_DIR = resolve(repoRoot, 'bench', 'results', 'profiles');

/** A process the benchmark started: the gateway, a consumer, bare Koa, or a raw Kafka client. */
export interface BenchProcess {
  readonly pid: number;
  readonly exited: Promise<number | null>;
  output(): string;
  /** Resident set size now, in MiB. */
  rssMiB(): number;
  /** Waits until `line` appears in its output. */
  waitForOutput(line: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  stop(): Promise<void>;
}

/**
 * `stdoutFile`: standard output goes to this file instead of into the bench's memory. A
 * gateway at LOG_LEVEL=info writes a line per request, megabytes a run; a deployment
 * writes them to a file or a collector, and gathering them in this process would make
 * the bench a bottleneck of what it measures. output() then holds standard error only.
 */
export function startProcess(args: readonly string[], env: Readonly<Record<string, string>> = {}, stdoutFile?: string): BenchProcess {
  const logFd = stdoutFile === undefined ? undefined : openSync(stdoutFile, 'a');
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', logFd ?? 'pipe', 'pipe'],
  });
  if (logFd !== undefined) closeSync(logFd);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  let code: number | null | undefined;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve((code = c))));
  return {
    pid: child.pid!,
    exited,
    output: () => output,
    rssMiB() {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kib = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN);
      return Math.round(kib / 1024);
    },
    async waitForOutput(line, timeoutMs = 120_000) {
      return waitFor(
        `${args.join(' ')} to print ${line}`,
        async () => {
          const found = line.exec(output);
          if (found !== null) return found;
          if (code !== undefined) throw new Error(`${args.join(' ')} exited with ${code}: ${output.slice(-2000)}`);
          return undefined;
        },
        timeoutMs,
        50,
      );
    },
    async stop() {
      if (code !== undefined) return;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(killer);
    },
  };
}

/** A TypeScript file of the repository run under tsx. */
export const tsxProcess = (file: string, args: readonly string[] = [], env: Readonly<Record<string, string>> = {}) =>
  startProcess(['--import', 'tsx', file, ...args], env);

/** A gateway's settings on the run's broker and ClickHouse server, in `database`, on a free port: the scenario adds its role and the rest. */
export async function serverGatewayEnvironment(ctx: BenchContext, database: string): Promise<Record<string, string>> {
  return {
    PORT: String(await freePort()),
    KAFKA_BROKERS: ctx.brokers.join(','),
    CLICKHOUSE_URL: ctx.clickhouseUrl,
    CLICKHOUSE_DATABASE: database,
    AUTH_JWT_SECRET: ctx.secret,
    CURSOR_SECRET: ctx.secret,
  };
}

/**
 * The built gateway (dist/, as `npm start` runs it), at the default LOG_LEVEL unless `env`
 * sets one, as a deployment runs it. Its log lines go to a file of the OS temp dir, as a
 * deployment's go to a file or a collector.
 */
export async function gatewayProcess(env: Readonly<Record<string, string>>): Promise<BenchProcess & { readonly url: string; readonly logFile: string }> {
  const port = env['PORT'];
  if (port === undefined) throw new Error('gatewayProcess needs PORT');
  // BENCH_CPU_PROF=1: each gateway process writes a V8 CPU profile on exit (npm run bench:profile reads them).
  const profile = process.env['BENCH_CPU_PROF'] === '1' ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [];
  const logDir = mkdtempSync(join(tmpdir(), 'core-gateway-bench-log-'));
  const logFile = join(logDir, 'gateway.log');
  const proc = startProcess([...profile, 'dist/src/main.js'], { HOST: '127.0.0.1', ...env }, logFile);
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    `the gateway on ${url} ready`,
    async () => {
      const res = await fetch(`${url}/readyz`).catch(() => undefined);
      if (res === undefined && (await Promise.race([proc.exited.then(() => true), Promise.resolve(false)]))) {
        throw new Error(`the gateway exited: ${proc.output().slice(-2000)}${readFileSync(logFile, 'utf8').slice(-2000)}`);
      }
      return res?.status === 200 ? true : undefined;
    },
    120_000,
    100,
  );
  return {
    ...proc,
    url,
    logFile,
    async stop() {
      await proc.stop();
      rmSync(logDir, { recursive: true, force: true });
    },
  };
}
