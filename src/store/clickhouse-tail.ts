import { NIL_UUID } from '../ids/uuid.js';
import { EVENT_COLUMNS, fromEventRow, type EventRow } from './event-rows.js';
import type { EventStore, TailBatch, TailPosition, TailQuery } from './event-store.js';
import { filterConditions } from './filter-sql.js';
import type { SqlParam, SqlParams, SqlTransport } from './sql-transport.js';

const SCOPE = 'org_id = {org_id:UUID} AND project_id = {project_id:UUID}';

/**
 * Strictly after (after_t, after_id) in ingestion order. Written with a plain lower bound
 * on ingested_at beside the tie-break, so the minmax skip index on ingested_at
 * (migrations.ts) can drop every granule ingested before the position.
 */
const AFTER = `ingested_at >= {after_t:DateTime64(3, 'UTC')} AND (ingested_at > {after_t:DateTime64(3, 'UTC')} OR id > {after_id:UUID})`;
const AT_OR_BEFORE = `(ingested_at < {after_t:DateTime64(3, 'UTC')} OR (ingested_at = {after_t:DateTime64(3, 'UTC')} AND id <= {after_id:UUID}))`;

/** The server's clock, so that the horizon and ingested_at (DEFAULT now64(3)) come from the same clock. */
export const TAIL_HORIZON_SQL = "SELECT toString(now64(3, 'UTC') - toIntervalMillisecond({settle_ms:UInt32})) AS horizon";

type TailRow = EventRow & { ingested_at: string };

function scopeParams(query: TailQuery): Record<string, SqlParam> {
  return { org_id: query.orgId, project_id: query.projectId, after_t: query.after.ingestedAt, after_id: query.after.id };
}

/**
 * The window of one poll: rows after the position and below the horizon, oldest
 * ingestion first. LIMIT 1 BY (occurred_at, id), the event's identity within the
 * project, keeps the first copy of an event delivered twice within the window.
 */
export function tailWindowSql(query: TailQuery): { sql: string; params: SqlParams } {
  const params: Record<string, SqlParam> = { ...scopeParams(query), before: query.before, limit: query.limit };
  const where = [SCOPE, ...filterConditions(query.filters, params), AFTER, "ingested_at < {before:DateTime64(3, 'UTC')}"];
  const sql = `SELECT ${EVENT_COLUMNS.join(', ')}, ingested_at
    FROM events
    WHERE ${where.join(' AND ')}
    ORDER BY ingested_at, id
    LIMIT 1 BY occurred_at, id
    LIMIT {limit:UInt32}`;
  return { sql, params };
}

/**
 * Which of the window's events already have a copy at or before the position: those were
 * sent (or skipped as older than the stream) before, and a redelivered copy must not be
 * sent again. A redelivered copy carries the original's occurred_at, so the lookup goes
 * through the primary key (org_id, project_id, occurred_at, id) instead of the project's
 * whole history.
 */
export function tailCopiesSql(query: TailQuery, window: readonly Pick<EventRow, 'id' | 'occurred_at'>[]): { sql: string; params: SqlParams } {
  const params: Record<string, SqlParam> = {
    ...scopeParams(query),
    occurred: [...new Set(window.map((r) => r.occurred_at))],
    ids: window.map((r) => r.id),
  };
  const sql = `SELECT DISTINCT occurred_at, id
    FROM events
    WHERE ${SCOPE}
      AND occurred_at IN {occurred:Array(DateTime64(6, 'UTC'))}
      AND id IN {ids:Array(UUID)}
      AND ${AT_OR_BEFORE}`;
  return { sql, params };
}

/** The later of the position and (horizon, NIL): never moves a stream backwards. */
function past(after: TailPosition, before: string): TailPosition {
  // Both are fixed-width 'YYYY-MM-DD hh:mm:ss.fff' texts, so text order is time order.
  return before > after.ingestedAt ? { ingestedAt: before, id: NIL_UUID } : after;
}

export function createClickHouseTail(transport: SqlTransport): Pick<EventStore, 'tailHorizon' | 'tailEvents'> {
  return {
    async tailHorizon(settleMs) {
      const [row] = await transport.query<{ horizon: string }>(TAIL_HORIZON_SQL, { settle_ms: settleMs });
      if (row === undefined) throw new Error('the store returned no clock');
      return row.horizon;
    },
    async tailEvents(query): Promise<TailBatch> {
      const window = tailWindowSql(query);
      const rows = await transport.query<TailRow>(window.sql, window.params);
      const last = rows.at(-1);
      const full = rows.length >= query.limit && last !== undefined;
      const identity = (r: Pick<EventRow, 'id' | 'occurred_at'>) => `${r.occurred_at}/${r.id}`;
      let copied = new Set<string>();
      if (rows.length > 0) {
        const copies = tailCopiesSql(query, rows);
        copied = new Set((await transport.query<Pick<EventRow, 'id' | 'occurred_at'>>(copies.sql, copies.params)).map(identity));
      }
      return {
        events: rows
          .filter((row) => !copied.has(identity(row)))
          .map((row) => ({ event: fromEventRow(row), position: { ingestedAt: row.ingested_at, id: row.id } })),
        next: full ? { ingestedAt: last.ingested_at, id: last.id } : past(query.after, query.before),
        full,
      };
    },
  };
}
