import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, repoRoot } from './processes.js';
import { KEEP_NO_FIRST_PAGES } from './first-pages-env.js';
import { waitFor } from './wait-for.js';

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** The gateway as an operating system process of its own (src/main.ts under tsx), as it runs in production. */
export interface GatewayProcess {
  readonly url: string;
  readonly pid: number;
  /** Resolves when the process has exited, with how. */
  readonly exited: Promise<Exit>;
  /** What it wrote to stdout and stderr so far. */
  output(): string;
  /** Its pino lines so far. */
  logLines(): Record<string, unknown>[];
  signal(signal: NodeJS.Signals): void;
  /** SIGKILLs it if it still runs and removes its data directory. */
  dispose(): Promise<void>;
}

/** Starts src/main.ts with `env` (on a free port, a data directory of its own, LOG_LEVEL info) and waits for /readyz. */
export async function startGatewayProcess(env: Record<string, string>): Promise<GatewayProcess> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'core-gateway-process-'));
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'info', ...KEEP_NO_FIRST_PAGES, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let gone = false;
  void exited.then(() => (gone = true));
  const url = `http://127.0.0.1:${port}`;
  const handle: GatewayProcess = {
    url,
    pid: child.pid!,
    exited,
    output: () => output,
    logLines: () =>
      output
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .flatMap((line) => {
          try {
            return [JSON.parse(line) as Record<string, unknown>];
          } catch {
            return [];
          }
        }),
    signal: (signal) => child.kill(signal),
    async dispose() {
      if (!gone) child.kill('SIGKILL');
      await exited;
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  try {
    const ready = waitFor(
      'the gateway process ready',
      async () => {
        const res = await fetch(`${url}/readyz`).catch(() => undefined);
        return res?.status === 200 ? true : undefined;
      },
      90_000,
      200,
    );
    const died = exited.then((exit) => {
      throw new Error(`the gateway process exited (${exit.code ?? exit.signal}) before it was ready: ${output.slice(-2000)}`);
    });
    await Promise.race([ready, died]);
  } catch (error) {
    await handle.dispose();
    throw error;
  }
  return handle;
}
