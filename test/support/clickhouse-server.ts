import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const repoRoot = resolve(import.meta.dirname, '..', '..');

export interface ClickHouseServerOptions {
  /** HTTP port on 127.0.0.1; a free one when unset. */
  port?: number;
  /** Where the tables live; kept after stop(). Unset: a directory of this run, deleted by stop(). */
  dataDir?: string;
}

/** A real ClickHouse HTTP server (scripts/clickhouse-start.sh) that a test may crash and bring back. */
export interface ClickHouseServerHandle {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly dataDir: string;
  /** SIGKILL, like a crash: no shutdown, nothing flushed. Resolves once the process is gone. */
  kill(): Promise<void>;
  /** Starts again on the same data and port, and resolves once GET /ping answers. A no-op while it runs. */
  resume(): Promise<void>;
  /** Stops it cleanly and removes this run's state (and the data dir, unless the caller gave one). */
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

async function script(name: string, env: Record<string, string>): Promise<void> {
  try {
    await run('bash', [join(repoRoot, 'scripts', name)], { env: { ...process.env, ...env }, maxBuffer: 10 * 1024 * 1024 });
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string };
    throw new Error(`scripts/${name} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`, { cause: error });
  }
}

/** A zombie counts as gone: it no longer serves or holds the data dir, and nobody may ever reap it. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** The pid in the state file may have been reused since; only a libchdb loader is ours to kill. */
function isOurServer(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('libchdb');
  } catch {
    return false;
  }
}

export async function startClickHouseServer(options: ClickHouseServerOptions = {}): Promise<ClickHouseServerHandle> {
  // State of its own, so a developer's `npm run clickhouse:start` server is left alone.
  const stateDir = mkdtempSync(join(tmpdir(), 'core-gateway-test-clickhouse-'));
  const dataDir = resolve(options.dataDir ?? join(stateDir, 'data'));
  const port = options.port ?? (await freePort());
  const env = {
    CLICKHOUSE_STATE_DIR: stateDir,
    CLICKHOUSE_DATA_DIR: dataDir,
    CLICKHOUSE_PORT: String(port),
    // The data dir's fate is decided here, not by a variable left in the caller's environment.
    CLICKHOUSE_WIPE: '0',
  };
  try {
    await script('clickhouse-start.sh', env);
  } catch (error) {
    rmSync(stateDir, { recursive: true, force: true });
    throw error;
  }

  const serverPid = (): number | undefined => {
    try {
      const match = /^CLICKHOUSE_PID=(\d+)$/m.exec(readFileSync(join(stateDir, 'server.env'), 'utf8'));
      return match?.[1] === undefined ? undefined : Number(match[1]);
    } catch {
      return undefined; // not started, or already stopped
    }
  };

  return {
    url: `http://127.0.0.1:${port}`,
    dataDir,
    async kill() {
      const pid = serverPid();
      if (pid === undefined || !isAlive(pid) || !isOurServer(pid)) return;
      // The loader leads its own process group; take the whole group, as a crash of the host would.
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        process.kill(pid, 'SIGKILL');
      }
      while (isAlive(pid)) await new Promise((r) => setTimeout(r, 20));
    },
    async resume() {
      await script('clickhouse-start.sh', env);
    },
    async stop() {
      await script('clickhouse-stop.sh', env);
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}
