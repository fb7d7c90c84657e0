import { resolve } from 'node:path';
import type { IdempotencyStore } from '../commands/idempotency-store.js';
import type { ClickHouseConfig, Config } from '../config/config.js';
import { StartupError } from '../errors/startup-error.js';
import { createClickHouseIdempotencyStore } from '../store/clickhouse-idempotency-store.js';
import { createClickHouseServerTransport } from '../store/clickhouse-server-transport.js';
import { createKeeperMapIdempotencyStore, keeperMapTableStatement } from '../store/keeper-map-idempotency-store.js';
import { BACKFILL_SETTLE_MS, migrate, type MigrateOptions, type StoreLayout } from '../store/migrations.js';
import type { SqlTransport } from '../store/sql-transport.js';
import { isKeeperMapUnavailable } from '../store/store-errors.js';

/** A backfill waits for inserts begun before its view to end: longer than the client lets one run. */
const backfillSettle = (config: ClickHouseConfig): MigrateOptions => ({ settleMs: Math.max(BACKFILL_SETTLE_MS, config.requestTimeoutMs + 5000) });

/**
 * An unreplicated cluster's tables, created shard by shard: ON CLUSTER needs Keeper DDL,
 * which a cluster without Keeper (and the local servers, which refuse replicated DDL)
 * lacks. Every shard must be listed, or a Distributed insert would reach a shard without
 * its local table.
 */
async function migrateShards(entry: SqlTransport, config: ClickHouseConfig, layout: StoreLayout): Promise<void> {
  const cluster = config.cluster;
  if (cluster === undefined || cluster.replicated) return;
  const [row] = await entry.query<{ shards: string | number }>(
    'SELECT uniqExact(shard_num) AS shards FROM system.clusters WHERE cluster = {cluster:String}',
    { cluster: cluster.name },
  );
  const shards = Number(row?.shards ?? 0);
  if (shards === 0) throw new StartupError(`CLICKHOUSE_CLUSTER: the server at CLICKHOUSE_URL has no cluster "${cluster.name}" in its remote_servers`);
  if (cluster.shardUrls === undefined) {
    if (shards > 1) {
      throw new StartupError(
        `CLICKHOUSE_SHARD_URLS: cluster "${cluster.name}" has ${shards} shards and is not replicated; list every shard's HTTP URL so each gets its tables`,
      );
    }
    return;
  }
  if (cluster.shardUrls.length !== shards) {
    throw new StartupError(`CLICKHOUSE_SHARD_URLS: lists ${cluster.shardUrls.length} URLs, but cluster "${cluster.name}" has ${shards} shards`);
  }
  for (const url of cluster.shardUrls) {
    const shard = await createClickHouseServerTransport({ ...config, url });
    try {
      await migrate(shard, layout, backfillSettle(config));
    } finally {
      await shard.close();
    }
  }
}

/** One node, or the cluster CLICKHOUSE_CLUSTER names. */
export function storeLayout(config: Config): StoreLayout {
  const cluster = config.clickhouse?.cluster;
  return cluster === undefined ? { kind: 'single' } : { kind: 'cluster', cluster: cluster.name, replicated: cluster.replicated };
}

/** chDB under DATA_DIR/clickhouse by default; a ClickHouse server when CLICKHOUSE_URL is set. Migrated before use. */
export async function openStore(config: Config): Promise<SqlTransport> {
  // chDB is loaded only by a process that uses it: its engine library, loaded at start by
  // every process, was a large share of a consumer's resident set on a ClickHouse server
  // (docs/decisions/ingest-memory-bound.md).
  const transport =
    config.clickhouse === undefined
      ? (await import('../store/chdb-transport.js')).createChdbTransport({ path: resolve(config.dataDir, 'clickhouse') })
      : await createClickHouseServerTransport(config.clickhouse);
  const layout = storeLayout(config);
  try {
    if (config.clickhouse !== undefined) await migrateShards(transport, config.clickhouse, layout);
    await migrate(transport, layout, config.clickhouse === undefined ? {} : backfillSettle(config.clickhouse));
  } catch (error) {
    await transport.close();
    throw error;
  }
  return transport;
}

/**
 * The Idempotency-Key store: a KeeperMap table (a real compare-and-set) where the server
 * has Keeper or ZooKeeper and IDEMPOTENCY_STORE allows it, the idempotency_keys table
 * otherwise (docs/decisions/idempotency.md).
 */
export async function openIdempotencyStore(transport: SqlTransport, config: Config): Promise<IdempotencyStore> {
  const clickhouse = config.clickhouse;
  if (clickhouse === undefined || clickhouse.idempotencyStore === 'table') return createClickHouseIdempotencyStore(transport);
  try {
    await transport.command(keeperMapTableStatement(clickhouse.database));
  } catch (error) {
    if (!isKeeperMapUnavailable(error)) throw error;
    if (clickhouse.idempotencyStore === 'keeper-map') {
      throw new StartupError(
        'IDEMPOTENCY_STORE=keeper-map: the ClickHouse server cannot hold KeeperMap tables (it needs <zookeeper> and <keeper_map_path_prefix> in its config)',
        { cause: error },
      );
    }
    return createClickHouseIdempotencyStore(transport);
  }
  return createKeeperMapIdempotencyStore(transport);
}
