import type { EventStore, TailScope } from './event-store.js';
import type { SqlParams, SqlTransport } from './sql-transport.js';

/**
 * The projects with a row ingested in `[from, before)`, one row each, at most `limit + 1`
 * so that "more than `limit`" is told apart. The bound on ingested_at lets the minmax skip
 * index on it (migrations.ts) drop the granules ingested outside the window: no sort key
 * or partition bounds ingestion time, so the index is what keeps this off the history.
 */
export function changedProjectsSql(from: string, before: string, limit: number): { sql: string; params: SqlParams } {
  const sql = `SELECT DISTINCT org_id, project_id
    FROM events
    WHERE ingested_at >= {from:DateTime64(3, 'UTC')} AND ingested_at < {before:DateTime64(3, 'UTC')}
    LIMIT {limit:UInt32}`;
  return { sql, params: { from, before, limit: limit + 1 } };
}

export function createClickHouseProjectChanges(transport: SqlTransport): Pick<EventStore, 'changedProjects'> {
  return {
    async changedProjects(from, before, limit) {
      const { sql, params } = changedProjectsSql(from, before, limit);
      const rows = await transport.query<{ org_id: string; project_id: string }>(sql, params, { lane: 'follow' });
      if (rows.length > limit) return undefined;
      return rows.map((row): TailScope => ({ orgId: row.org_id, projectId: row.project_id }));
    },
  };
}
