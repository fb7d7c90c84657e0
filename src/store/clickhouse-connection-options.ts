import { ClickHouseLogLevel, type ClickHouseClientConfigOptions } from '@clickhouse/client';
import type { ClickHouseConfig } from './clickhouse-settings.js';

/** What every @clickhouse/client of the server transport shares: credentials, trust, logging. */
export function clickHouseConnectionOptions(config: ClickHouseConfig): ClickHouseClientConfigOptions {
  return {
    ...(config.username === undefined ? {} : { username: config.username }),
    ...(config.password === undefined ? {} : { password: config.password }),
    // Trusted instead of Node's built-in roots, for a server whose certificate a private CA signed.
    ...(config.ca === undefined ? {} : { tls: { ca_cert: Buffer.from(config.ca) } }),
    // The client's own logger prints failed queries with their SQL and bound values to the
    // console; failures reach our logger as store errors instead, without them.
    log: { level: ClickHouseLogLevel.OFF },
  };
}
