import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, repoRoot } from '../../support/processes.js';

export interface Ended {
  readonly code: number | null;
  /** Everything it wrote, stdout and stderr. */
  readonly output: string;
  /** The last line it wrote to stderr. */
  readonly lastError: string;
}

/** Runs src/main.ts with `env` until it exits on its own; fails if it is still running after `timeoutMs`. */
export async function runGatewayToExit(env: Record<string, string>, timeoutMs = 30_000): Promise<Ended> {
  const dataDir = mkdtempSync(join(tmpdir(), 'core-gateway-exit-'));
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: String(await freePort()), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'debug', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let errors = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    errors += chunk.toString();
  });
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`the gateway was still running after ${timeoutMs} ms: ${output.slice(-2000)}`));
      }, timeoutMs);
      child.once('close', (exitCode) => {
        clearTimeout(timer);
        resolve(exitCode);
      });
    });
    return { code, output, lastError: errors.trimEnd().split('\n').at(-1) ?? '' };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
