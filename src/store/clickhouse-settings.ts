import { ConfigError } from '../settings/config-error.js';
import { httpUrl, integer, list, optional, type Env } from '../settings/env.js';
import { certificatesFile, secretVariable } from '../settings/file-variables.js';

export interface ClickHouseConfig {
  readonly url: string;
  readonly username: string | undefined;
  readonly password: string | undefined;
  /** PEM CA bundle trusted for an https:// URL instead of Node's built-in roots (CLICKHOUSE_CA_FILE). */
  readonly ca: string | undefined;
  readonly database: string;
  /** Longest wait for one answer from the server; past it the request fails as unavailable (503). */
  readonly requestTimeoutMs: number;
  /** Tables on a cluster of shards behind Distributed tables (CLICKHOUSE_CLUSTER); undefined is one node. */
  readonly cluster:
    | {
        readonly name: string;
        readonly replicated: boolean;
        /**
         * HTTP URLs of every shard, the entry node among them (CLICKHOUSE_SHARD_URLS): an
         * unreplicated cluster's tables are created on each in turn, since ON CLUSTER needs
         * Keeper DDL. Undefined: the entry node only, allowed only on a one-shard cluster.
         */
        readonly shardUrls: readonly string[] | undefined;
      }
    | undefined;
  /**
   * Where Idempotency-Key records live (IDEMPOTENCY_STORE): `keeper-map`, a KeeperMap table
   * with a real compare-and-set (the server needs Keeper or ZooKeeper); `table`, a
   * MergeTree table; `auto` (default), keeper-map where the server can hold it.
   */
  readonly idempotencyStore: 'auto' | 'keeper-map' | 'table';
}

/** CLICKHOUSE_URL and the settings that go with it; undefined when it is unset (the embedded chDB). */
export function parseClickHouse(env: Env): ClickHouseConfig | undefined {
  const raw = optional(env, 'CLICKHOUSE_URL');
  if (raw === undefined) return undefined;
  const url = httpUrl('CLICKHOUSE_URL', raw);
  // Credentials and database may sit in the URL or beside it; the variables win.
  const username = optional(env, 'CLICKHOUSE_USER') ?? (url.username ? decodeURIComponent(url.username) : undefined);
  const password = secretVariable(env, 'CLICKHOUSE_PASSWORD') ?? (url.password ? decodeURIComponent(url.password) : undefined);
  const pathDatabase = url.pathname.replace(/^\/+|\/+$/g, '');
  const database = optional(env, 'CLICKHOUSE_DATABASE') ?? (pathDatabase || 'default');
  if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(database)) {
    throw new ConfigError('CLICKHOUSE_DATABASE', `"${database}" is not a plain database name`);
  }
  url.username = '';
  url.password = '';
  url.pathname = '/';
  const requestTimeoutMs = integer(env, 'CLICKHOUSE_REQUEST_TIMEOUT_MS', 10_000, 100, 600_000);
  if (url.protocol !== 'https:' && optional(env, 'CLICKHOUSE_CA_FILE') !== undefined) {
    throw new ConfigError('CLICKHOUSE_CA_FILE', 'applies only to an https:// CLICKHOUSE_URL');
  }
  const ca = certificatesFile(env, 'CLICKHOUSE_CA_FILE')?.pem;
  const idempotencyStore = optional(env, 'IDEMPOTENCY_STORE') ?? 'auto';
  if (idempotencyStore !== 'auto' && idempotencyStore !== 'keeper-map' && idempotencyStore !== 'table') {
    throw new ConfigError('IDEMPOTENCY_STORE', `must be auto, keeper-map or table, got "${idempotencyStore}"`);
  }
  return {
    url: url.toString().replace(/\/$/, ''),
    username,
    password,
    ca,
    database,
    requestTimeoutMs,
    cluster: parseCluster(env),
    idempotencyStore,
  };
}

function parseCluster(env: Env): ClickHouseConfig['cluster'] {
  const name = optional(env, 'CLICKHOUSE_CLUSTER');
  const replicated = optional(env, 'CLICKHOUSE_CLUSTER_REPLICATED');
  const shardUrls = list(env, 'CLICKHOUSE_SHARD_URLS');
  if (name === undefined) {
    if (replicated !== undefined) throw new ConfigError('CLICKHOUSE_CLUSTER_REPLICATED', 'applies only with CLICKHOUSE_CLUSTER');
    if (shardUrls !== undefined) throw new ConfigError('CLICKHOUSE_SHARD_URLS', 'applies only with CLICKHOUSE_CLUSTER');
    return undefined;
  }
  (shardUrls ?? []).forEach((shardUrl, i) => httpUrl('CLICKHOUSE_SHARD_URLS', shardUrl, String(i + 1)));
  if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(name)) throw new ConfigError('CLICKHOUSE_CLUSTER', `"${name}" is not a plain cluster name`);
  if (replicated !== undefined && replicated !== 'true' && replicated !== 'false') {
    throw new ConfigError('CLICKHOUSE_CLUSTER_REPLICATED', `must be true or false, got "${replicated}"`);
  }
  if (replicated !== 'false' && shardUrls !== undefined) {
    throw new ConfigError('CLICKHOUSE_SHARD_URLS', 'applies only with CLICKHOUSE_CLUSTER_REPLICATED=false (a replicated cluster creates its tables ON CLUSTER)');
  }
  return { name, replicated: replicated !== 'false', shardUrls: shardUrls?.map((u) => u.replace(/\/$/, '')) };
}
