import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { createClient, type ClickHouseClient, type ClickHouseSettings } from '@clickhouse/client';
import type { ClickHouseConfig } from './clickhouse-settings.js';
import { clickHouseConnectionOptions } from './clickhouse-connection-options.js';
import type { InsertOptions, QueryLane, QueryOptions, SqlParams, SqlTransport } from './sql-transport.js';
import { INSERT_SETTINGS, jsonEachRowBody } from './sql-transport.js';
import { toStoreError } from './store-errors.js';

// Below this many rows a write is buffered server-side (async_insert) instead of
// creating a part of its own; the caller still waits until the rows are written.
const ASYNC_INSERT_BELOW_ROWS = 1000;

// The client's own default, said here because a test holds every one of them.
export const REQUEST_CONNECTIONS = 10;
// One for each follower, which asks one query at a time: the live tail's clock (one read
// shared by its streams), its shared read, and the first-page watch.
const FOLLOW_CONNECTIONS = 3;

type Buffering = Pick<ClickHouseSettings, 'async_insert' | 'wait_for_async_insert'>;

/**
 * The settings that buffer a small write. A server flushes its buffer after its busy
 * timeout (200 ms at most by default), and the insert waits for the flush, so the
 * statements of one large write are never buffered, however few rows each holds.
 */
export function bufferingFor(statementRows: number, writeRows = statementRows): Buffering {
  return Math.max(statementRows, writeRows) < ASYNC_INSERT_BELOW_ROWS ? { async_insert: 1, wait_for_async_insert: 1 } : {};
}

/**
 * On a cluster the tables are Distributed. An insert returns only once its shard has
 * the rows (a background forward would let an Idempotency-Key retry miss the record it
 * just wrote), and a read whose WHERE fixes the sharding key asks only that shard.
 */
const CLUSTER_SETTINGS = {
  insert: { distributed_foreground_insert: 1 },
  read: { optimize_skip_unused_shards: 1 },
} as const;

/** An insert's settings: the product's own, buffering by the size of its whole write, and a cluster's. */
export function insertSettings(statementRows: number, options: InsertOptions, clustered: boolean): ClickHouseSettings {
  return { ...INSERT_SETTINGS, ...bufferingFor(statementRows, options.writeRows), ...(clustered ? CLUSTER_SETTINGS.insert : {}) };
}

/** A ClickHouse server over HTTP. Creates the configured database when it is missing. */
export async function createClickHouseServerTransport(config: ClickHouseConfig): Promise<SqlTransport> {
  const common = clickHouseConnectionOptions(config);
  if (config.database !== 'default') {
    const bootstrap = createClient({ url: config.url, ...common, request_timeout: config.requestTimeoutMs });
    try {
      // The name is checked against a plain-identifier pattern in config.ts; DDL cannot bind it.
      const onCluster = config.cluster?.replicated === true ? ` ON CLUSTER ${config.cluster.name}` : '';
      await bootstrap.command({ query: `CREATE DATABASE IF NOT EXISTS \`${config.database}\`${onCluster}` });
    } catch (error) {
      throw toStoreError(error, 'create database');
    } finally {
      await bootstrap.close();
    }
  }
  // Each lane is a client of its own, so that its sockets are its own.
  const laneClient = (connections: number): ClickHouseClient =>
    createClient({ url: config.url, database: config.database, ...common, request_timeout: config.requestTimeoutMs, max_open_connections: connections });
  const client = laneClient(REQUEST_CONNECTIONS);
  const follow = laneClient(FOLLOW_CONNECTIONS);
  const lanes: Record<QueryLane, ClickHouseClient> = { requests: client, follow };

  // One socket for readiness alone, so a probe never waits for one of the requests' sockets.
  const probe: ClickHouseClient = createClient({ url: config.url, ...common, request_timeout: config.requestTimeoutMs, max_open_connections: 1 });

  const clustered = config.cluster !== undefined;
  const readSettings = clustered ? CLUSTER_SETTINGS.read : {};

  return {
    kind: 'clickhouse-server',
    async command(sql: string, params?: SqlParams) {
      try {
        await client.command({ query: sql, ...(params === undefined ? {} : { query_params: params }) });
      } catch (error) {
        throw toStoreError(error, 'command');
      }
    },
    async query<Row>(sql: string, params?: SqlParams, options: QueryOptions = {}): Promise<Row[]> {
      try {
        const result = await lanes[options.lane ?? 'requests'].query({
          query: sql,
          format: 'JSONEachRow',
          clickhouse_settings: readSettings,
          ...(params === undefined ? {} : { query_params: params }),
        });
        return await result.json<Row>();
      } catch (error) {
        throw toStoreError(error, 'query');
      }
    },
    async insert(table, rows, options = {}) {
      if (rows.length === 0) return;
      try {
        // The rows are JSON text already; client.insert would want objects to encode again.
        const { stream } = await client.exec({
          // The name is one of our tables, never input.
          query: `INSERT INTO ${table} FORMAT JSONEachRow`,
          values: Readable.from([jsonEachRowBody(rows)], { objectMode: false }),
          clickhouse_settings: insertSettings(rows.length, options, clustered),
        });
        // An insert answers with no rows; reading the answer to its end frees the socket.
        stream.resume();
        await finished(stream);
      } catch (error) {
        throw toStoreError(error, 'insert');
      }
    },
    async ping() {
      const result = await probe.ping();
      if (!result.success) throw toStoreError(result.error, 'ping');
    },
    async close() {
      await Promise.all([client.close(), follow.close(), probe.close()]);
    },
  };
}
