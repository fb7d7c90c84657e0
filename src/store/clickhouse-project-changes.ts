import { EVENT_COLUMNS, fromEventRow, type EventRow } from './event-rows.js';
import type { EventStore, StoredEvent, TailScope } from './event-store.js';
import type { SqlParams, SqlTransport } from './sql-transport.js';

/**
 * Both reads of a window bound ingested_at, so the minmax skip index on it (migrations.ts)
 * drops the granules ingested outside the window: no sort key or partition bounds
 * ingestion time, so the index is what keeps them off the history.
 */
const WINDOW = "ingested_at >= {from:DateTime64(3, 'UTC')} AND ingested_at < {before:DateTime64(3, 'UTC')}";

/** The projects with a row ingested in `[from, before)`, one row each, at most `limit + 1` so that "more than `limit`" is told apart. */
export function changedProjectsSql(from: string, before: string, limit: number): { sql: string; params: SqlParams } {
  const sql = `SELECT DISTINCT org_id, project_id
    FROM events
    WHERE ${WINDOW}
    LIMIT {limit:UInt32}`;
  return { sql, params: { from, before, limit: limit + 1 } };
}

/** The rows ingested in `[from, before)`, copies included, at most `limit + 1`, in no order. */
export function writtenEventsSql(from: string, before: string, limit: number): { sql: string; params: SqlParams } {
  const sql = `SELECT ${EVENT_COLUMNS.join(', ')}
    FROM events
    WHERE ${WINDOW}
    LIMIT {limit:UInt32}`;
  return { sql, params: { from, before, limit: limit + 1 } };
}

export function createClickHouseProjectChanges(transport: SqlTransport): Pick<EventStore, 'changedProjects' | 'writtenEvents'> {
  return {
    async changedProjects(from, before, limit) {
      const { sql, params } = changedProjectsSql(from, before, limit);
      const rows = await transport.query<{ org_id: string; project_id: string }>(sql, params, { lane: 'follow' });
      if (rows.length > limit) return undefined;
      return rows.map((row): TailScope => ({ orgId: row.org_id, projectId: row.project_id }));
    },
    async writtenEvents(from, before, limit) {
      const { sql, params } = writtenEventsSql(from, before, limit);
      const rows = await transport.query<EventRow>(sql, params, { lane: 'follow' });
      if (rows.length > limit) return undefined;
      try {
        return rows.map((row): StoredEvent => ({ event: fromEventRow(row), position: { occurredAt: row.occurred_at, id: row.id } }));
      } catch {
        // A row no feed read could serve either (a payload that is not JSON, written by hand):
        // the window's projects are named instead, and their pages dropped, rather than the
        // watch failing on it poll after poll.
        return undefined;
      }
    },
  };
}
