import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, runScript } from './processes.js';

/** A real Apache ZooKeeper (scripts/zookeeper-start.sh) of this test run. */
export interface ZooKeeperHandle {
  /** `127.0.0.1:<port>`, as CLICKHOUSE_ZOOKEEPER takes it. */
  readonly connect: string;
  /** Stops it and removes its state and data. */
  stop(): Promise<void>;
}

export async function startZooKeeper(): Promise<ZooKeeperHandle> {
  // State of its own, so a developer's `npm run zookeeper:start` server is left alone.
  const stateDir = mkdtempSync(join(tmpdir(), 'core-gateway-test-zookeeper-'));
  const port = await freePort();
  const env = { ZOOKEEPER_STATE_DIR: stateDir, ZOOKEEPER_PORT: String(port) };
  try {
    await runScript('zookeeper-start.sh', env);
  } catch (error) {
    rmSync(stateDir, { recursive: true, force: true });
    throw error;
  }
  return {
    connect: `127.0.0.1:${port}`,
    async stop() {
      await runScript('zookeeper-stop.sh', env);
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}
