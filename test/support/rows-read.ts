import { resolve } from 'node:path';
import { Session } from 'chdb';
import type { Config } from '../../src/config/config.js';
import type { SqlParams } from '../../src/store/sql-transport.js';

/**
 * The rows the engine read to answer `sql`, as the engine itself counts them: the
 * server's `X-ClickHouse-Summary` header, or chDB's own statistics of the query. What a
 * query's plan selects is an upper bound; this is what it read, early stops included.
 */
export async function rowsRead(config: Config, sql: string, params: SqlParams = {}): Promise<number> {
  const server = config.clickhouse;
  if (server === undefined) {
    // A second session on the gateway's directory, as openStore opens one: the same process may.
    const session = new Session(resolve(config.dataDir, 'clickhouse'));
    try {
      const result = session.queryBind(sql, params, 'JSON');
      const { statistics } = JSON.parse(result.toString()) as { statistics: { rows_read: number } };
      return statistics.rows_read;
    } finally {
      session.close();
    }
  }
  const url = new URL(server.url);
  url.searchParams.set('database', server.database);
  url.searchParams.set('query', sql);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(`param_${name}`, String(value));
  // As the gateway's own client does: a server with users (the container's) refuses an
  // anonymous query. The configuration has taken any credentials out of the URL already.
  const headers: Record<string, string> = server.username === undefined ? {} : { 'X-ClickHouse-User': server.username, 'X-ClickHouse-Key': server.password ?? '' };
  const res = await fetch(url, { method: 'POST', headers });
  const text = await res.text();
  if (!res.ok) throw new Error(`ClickHouse answered ${res.status}: ${text.slice(0, 300)}`);
  const summary = JSON.parse(res.headers.get('x-clickhouse-summary') ?? '{}') as { read_rows?: string };
  if (summary.read_rows === undefined) throw new Error('the server sent no X-ClickHouse-Summary');
  return Number(summary.read_rows);
}
