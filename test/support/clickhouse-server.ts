import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, isAlive, runScript as script, stateValue } from './processes.js';

export interface ClickHouseServerOptions {
  /** HTTP port on 127.0.0.1; a free one when unset. */
  port?: number;
  /** Where the tables live; kept after stop(). Unset: a directory of this run, deleted by stop(). */
  dataDir?: string;
  /** A cluster of this name on every server, one shard each (native ports picked free), for Distributed tables. */
  cluster?: string;
  /** How many servers, one shard each (default 1; more needs `cluster`). */
  shards?: number;
  /** host:port of a ZooKeeper every server connects to (KeeperMap tables). */
  zookeeper?: string;
}

/** One shard's server, which a test may SIGKILL on its own. */
export interface ClickHouseShard {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** SIGKILL this shard's server only. Resolves once it is gone; resume() brings it back. */
  kill(): Promise<void>;
}

/** A real ClickHouse HTTP server (scripts/clickhouse-start.sh) that a test may crash and bring back. */
export interface ClickHouseServerHandle {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly dataDir: string;
  /** Every shard's server, shard 1 (at `url`) first. */
  readonly shards: readonly ClickHouseShard[];
  /** SIGKILL, like a crash: no shutdown, nothing flushed. Resolves once the process is gone. */
  kill(): Promise<void>;
  /** SIGSTOP: the server keeps its connections but answers nothing, like one stalled on a slow disk. */
  freeze(): Promise<void>;
  /** SIGCONT after freeze(). */
  thaw(): Promise<void>;
  /** Starts again on the same data and port (every shard that is down), and resolves once GET /ping answers. A no-op while they run. */
  resume(): Promise<void>;
  /** Stops it cleanly and removes this run's state (and the data dir, unless the caller gave one). */
  stop(): Promise<void>;
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
  const shardCount = options.shards ?? 1;
  if (shardCount > 1 && options.cluster === undefined) throw new Error('several shards need a cluster name');
  const port = options.port ?? (await freePort(shardCount));
  const env = {
    CLICKHOUSE_STATE_DIR: stateDir,
    CLICKHOUSE_DATA_DIR: dataDir,
    CLICKHOUSE_PORT: String(port),
    CLICKHOUSE_SHARDS: String(shardCount),
    ...(options.cluster === undefined ? {} : { CLICKHOUSE_CLUSTER: options.cluster, CLICKHOUSE_TCP_PORT: String(await freePort(shardCount)) }),
    ...(options.zookeeper === undefined ? {} : { CLICKHOUSE_ZOOKEEPER: options.zookeeper }),
    // The data dir's fate is decided here, not by a variable left in the caller's environment.
    CLICKHOUSE_WIPE: '0',
  };
  try {
    await script('clickhouse-start.sh', env);
  } catch (error) {
    rmSync(stateDir, { recursive: true, force: true });
    throw error;
  }

  // Shard 1 keeps its state in the state dir itself; shard i in shard-i under it.
  const shardStateFile = (shard: number): string => join(shard === 1 ? stateDir : join(stateDir, `shard-${shard}`), 'server.env');
  const shardPid = (shard: number): number | undefined => {
    // Undefined when not started, or already stopped.
    const pid = stateValue(shardStateFile(shard), 'CLICKHOUSE_PID');
    return pid === undefined ? undefined : Number(pid);
  };
  const serverPid = (): number | undefined => shardPid(1);
  const killShard = async (shard: number): Promise<void> => {
    const pid = shardPid(shard);
    if (pid === undefined || !isAlive(pid) || !isOurServer(pid)) return;
    // The loader leads its own process group; take the whole group, as a crash of the host would.
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      process.kill(pid, 'SIGKILL');
    }
    while (isAlive(pid)) await new Promise((r) => setTimeout(r, 20));
  };

  /** The loader leads its own process group: signal all of it, engine threads and loader alike. */
  const signalGroup = (signal: NodeJS.Signals): void => {
    const pid = serverPid();
    if (pid === undefined || !isAlive(pid) || !isOurServer(pid)) throw new Error(`no ClickHouse server of this test to ${signal}`);
    process.kill(-pid, signal);
  };

  return {
    url: `http://127.0.0.1:${port}`,
    dataDir,
    shards: Array.from({ length: shardCount }, (_, i) => ({ url: `http://127.0.0.1:${port + i}`, kill: () => killShard(i + 1) })),
    kill: () => killShard(1),
    async freeze() {
      signalGroup('SIGSTOP');
    },
    async thaw() {
      signalGroup('SIGCONT');
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
