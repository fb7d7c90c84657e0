import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import type { ClickHouseConfig } from '../config.js';
import type { SqlParams, SqlTransport } from './sql-transport.js';
import { toStoreError } from './store-errors.js';

// Below this many rows an insert is buffered server-side (async_insert) instead of
// creating a part of its own; the caller still waits until the rows are written.
const ASYNC_INSERT_BELOW_ROWS = 1000;

/** A ClickHouse server over HTTP. Creates the configured database when it is missing. */
export async function createClickHouseServerTransport(config: ClickHouseConfig): Promise<SqlTransport> {
  const common = {
    ...(config.username === undefined ? {} : { username: config.username }),
    ...(config.password === undefined ? {} : { password: config.password }),
    // The client's own logger prints failed queries with their SQL and bound values to the
    // console; failures reach our logger as store errors instead, without them.
    log: { level: ClickHouseLogLevel.OFF },
  };
  if (config.database !== 'default') {
    const bootstrap = createClient({ url: config.url, ...common, request_timeout: config.requestTimeoutMs });
    try {
      // The name is checked against a plain-identifier pattern in config.ts; DDL cannot bind it.
      await bootstrap.command({ query: `CREATE DATABASE IF NOT EXISTS \`${config.database}\`` });
    } catch (error) {
      throw toStoreError(error, 'create database');
    } finally {
      await bootstrap.close();
    }
  }
  const client: ClickHouseClient = createClient({
    url: config.url,
    database: config.database,
    ...common,
    request_timeout: config.requestTimeoutMs,
  });

  return {
    kind: 'clickhouse-server',
    async command(sql: string, params?: SqlParams) {
      try {
        await client.command({ query: sql, ...(params === undefined ? {} : { query_params: params }) });
      } catch (error) {
        throw toStoreError(error, 'command');
      }
    },
    async query<Row>(sql: string, params?: SqlParams): Promise<Row[]> {
      try {
        const result = await client.query({
          query: sql,
          format: 'JSONEachRow',
          ...(params === undefined ? {} : { query_params: params }),
        });
        return await result.json<Row>();
      } catch (error) {
        throw toStoreError(error, 'query');
      }
    },
    async insert(table, rows) {
      if (rows.length === 0) return;
      try {
        await client.insert({
          table,
          values: rows as object[],
          format: 'JSONEachRow',
          ...(rows.length < ASYNC_INSERT_BELOW_ROWS
            ? { clickhouse_settings: { async_insert: 1, wait_for_async_insert: 1 } }
            : {}),
        });
      } catch (error) {
        throw toStoreError(error, 'insert');
      }
    },
    async close() {
      await client.close();
    },
  };
}
