import { randomBytes } from 'node:crypto';
import { startClickHouseServer, type ClickHouseServerHandle } from '../../support/clickhouse-server.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper-server.js';

/**
 * The cluster of these suites: a real Apache ZooKeeper and two ClickHouse servers, one
 * shard each, both with cluster `core` of the two and ZooKeeper wired in
 * (scripts/zookeeper-start.sh, CLICKHOUSE_SHARDS=2 scripts/clickhouse-start.sh). Started
 * on first use, stopped after the run. Files keep apart by database.
 */
export interface ClusterInfra {
  readonly zookeeper: ZooKeeperHandle;
  readonly clickhouse: ClickHouseServerHandle;
}

export const CLUSTER = 'core';

let started: Promise<ClusterInfra> | undefined;

export function clusterInfra(): Promise<ClusterInfra> {
  started ??= (async () => {
    const zookeeper = await startZooKeeper();
    try {
      const clickhouse = await startClickHouseServer({ cluster: CLUSTER, shards: 2, zookeeper: zookeeper.connect });
      return { zookeeper, clickhouse };
    } catch (error) {
      await zookeeper.stop();
      throw error;
    }
  })();
  return started;
}

/** A gateway's environment on the cluster: entry node shard 1, tables created on both shards, a database of its own. */
export function clusterGatewayEnv(infra: ClusterInfra, extra: Record<string, string> = {}): Record<string, string> {
  return {
    CLICKHOUSE_URL: infra.clickhouse.url,
    CLICKHOUSE_DATABASE: `test_${randomBytes(5).toString('hex')}`,
    CLICKHOUSE_REQUEST_TIMEOUT_MS: '5000',
    CLICKHOUSE_CLUSTER: CLUSTER,
    CLICKHOUSE_CLUSTER_REPLICATED: 'false',
    CLICKHOUSE_SHARD_URLS: infra.clickhouse.shards.map((s) => s.url).join(','),
    CURSOR_SECRET: randomBytes(32).toString('hex'),
    ...extra,
  };
}

/** Root hooks, loaded with --require: stop the servers after the whole run. */
export const mochaHooks = {
  async afterAll(this: Mocha.Context): Promise<void> {
    this.timeout(90_000);
    if (started === undefined) return;
    const infra = await started.catch(() => undefined);
    if (infra === undefined) return;
    try {
      await infra.clickhouse.stop();
    } finally {
      await infra.zookeeper.stop();
    }
  },
};
