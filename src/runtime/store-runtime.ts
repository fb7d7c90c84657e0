import { resolve } from 'node:path';
import type { Config } from '../config/config.js';
import { createChdbTransport } from '../store/chdb-transport.js';
import { createClickHouseServerTransport } from '../store/clickhouse-server-transport.js';
import { migrate, type StoreLayout } from '../store/migrations.js';
import type { SqlTransport } from '../store/sql-transport.js';

/** chDB under DATA_DIR/clickhouse by default; a ClickHouse server when CLICKHOUSE_URL is set. Migrated before use. */
export async function openStore(config: Config): Promise<SqlTransport> {
  const transport =
    config.clickhouse === undefined
      ? createChdbTransport({ path: resolve(config.dataDir, 'clickhouse') })
      : await createClickHouseServerTransport(config.clickhouse);
  const cluster = config.clickhouse?.cluster;
  const layout: StoreLayout = cluster === undefined ? { kind: 'single' } : { kind: 'cluster', cluster: cluster.name, replicated: cluster.replicated };
  try {
    await migrate(transport, layout);
  } catch (error) {
    await transport.close();
    throw error;
  }
  return transport;
}
