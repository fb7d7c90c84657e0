import { NIL_UUID } from '../ids/uuid.js';
import { EVENT_COLUMNS, fromEventRow, type EventRow } from './event-rows.js';
import type { EventStore, SharedTailQuery, TailBatch, TailPosition, TailQuery } from './event-store.js';
import { filterConditions } from './filter-sql.js';
import type { QueryLane, SqlParam, SqlParams, SqlTransport } from './sql-transport.js';

const SCOPE = 'org_id = {org_id:UUID} AND project_id = {project_id:UUID}';
/**
 * The shared read's projects. Two IN lists over the primary key's first two columns rather
 * than one list of pairs: it selects the same key ranges, binds as plain arrays on both
 * transports, and the few rows of a pair nobody asked for (an organization's id crossed
 * with another's project id) are dropped in memory by the exact pair.
 */
const SCOPES = 'org_id IN {org_ids:Array(UUID)} AND project_id IN {project_ids:Array(UUID)}';

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
type Identity = Pick<EventRow, 'org_id' | 'project_id' | 'id' | 'occurred_at'>;

/** One project (its filters in SQL), or the projects of a shared read (no filters: each tail applies its own in memory). */
type Window = { scope: 'one'; query: TailQuery } | { scope: 'many'; query: SharedTailQuery };

function windowParams(w: Window): Record<string, SqlParam> {
  const at = { after_t: w.query.after.ingestedAt, after_id: w.query.after.id };
  if (w.scope === 'one') return { org_id: w.query.orgId, project_id: w.query.projectId, ...at };
  return { org_ids: [...new Set(w.query.scopes.map((s) => s.orgId))], project_ids: [...new Set(w.query.scopes.map((s) => s.projectId))], ...at };
}

function windowSql(w: Window): { sql: string; params: SqlParams } {
  const params: Record<string, SqlParam> = { ...windowParams(w), before: w.query.before, limit: w.query.limit };
  const scope = w.scope === 'one' ? [SCOPE, ...filterConditions(w.query.filters, params)] : [SCOPES];
  const where = [...scope, AFTER, "ingested_at < {before:DateTime64(3, 'UTC')}"];
  const sql = `SELECT ${EVENT_COLUMNS.join(', ')}, ingested_at
    FROM events
    WHERE ${where.join(' AND ')}
    ORDER BY ingested_at, id
    LIMIT 1 BY org_id, project_id, occurred_at, id
    LIMIT {limit:UInt32}`;
  return { sql, params };
}

/**
 * The window of one poll: rows after the position and below the horizon, oldest
 * ingestion first. LIMIT 1 BY the event's identity (its project and (occurred_at, id))
 * keeps the first copy of an event delivered twice within the window.
 */
export function tailWindowSql(query: TailQuery): { sql: string; params: SqlParams } {
  return windowSql({ scope: 'one', query });
}

/** The window of a shared read: the same, over every tailed project at once and with no filters. */
export function sharedTailWindowSql(query: SharedTailQuery): { sql: string; params: SqlParams } {
  return windowSql({ scope: 'many', query });
}

/**
 * Which of the window's events already have a copy at or before the position: those were
 * sent (or skipped as older than the stream) before, and a redelivered copy must not be
 * sent again. A redelivered copy carries the original's occurred_at, so the lookup goes
 * through the primary key (org_id, project_id, occurred_at, id) instead of the projects'
 * whole history.
 */
function copiesSql(w: Window, window: readonly Identity[]): { sql: string; params: SqlParams } {
  const params: Record<string, SqlParam> = {
    ...windowParams(w),
    occurred: [...new Set(window.map((r) => r.occurred_at))],
    ids: window.map((r) => r.id),
  };
  const sql = `SELECT DISTINCT org_id, project_id, occurred_at, id
    FROM events
    WHERE ${w.scope === 'one' ? SCOPE : SCOPES}
      AND occurred_at IN {occurred:Array(DateTime64(6, 'UTC'))}
      AND id IN {ids:Array(UUID)}
      AND ${AT_OR_BEFORE}`;
  return { sql, params };
}

export function tailCopiesSql(query: TailQuery, window: readonly Identity[]): { sql: string; params: SqlParams } {
  return copiesSql({ scope: 'one', query }, window);
}

/** The later of the position and (horizon, NIL): never moves a stream backwards. */
function past(after: TailPosition, before: string): TailPosition {
  // Both are fixed-width 'YYYY-MM-DD hh:mm:ss.fff' texts, so text order is time order.
  return before > after.ingestedAt ? { ingestedAt: before, id: NIL_UUID } : after;
}

const identity = (r: Identity) => `${r.org_id}/${r.project_id}/${r.occurred_at}/${r.id}`;
const pairOf = (s: { orgId: string; projectId: string }) => `${s.orgId}/${s.projectId}`;

export function createClickHouseTail(transport: SqlTransport): Pick<EventStore, 'tailHorizon' | 'tailEvents' | 'tailProjects'> {
  async function read(w: Window, wanted: (row: TailRow) => boolean, lane: QueryLane): Promise<TailBatch> {
    const window = windowSql(w);
    const rows = await transport.query<TailRow>(window.sql, window.params, { lane });
    const last = rows.at(-1);
    // Full counts every row read, also those of pairs nobody asked for: the next read starts after the last of them.
    const full = rows.length >= w.query.limit && last !== undefined;
    const kept = rows.filter(wanted);
    let copied = new Set<string>();
    if (kept.length > 0) {
      const copies = copiesSql(w, kept);
      copied = new Set((await transport.query<Identity>(copies.sql, copies.params, { lane })).map(identity));
    }
    return {
      events: kept
        .filter((row) => !copied.has(identity(row)))
        .map((row) => ({ event: fromEventRow(row), position: { ingestedAt: row.ingested_at, id: row.id } })),
      next: full ? { ingestedAt: last.ingested_at, id: last.id } : past(w.query.after, w.query.before),
      full,
    };
  }

  return {
    async tailHorizon(settleMs) {
      const [row] = await transport.query<{ horizon: string }>(TAIL_HORIZON_SQL, { settle_ms: settleMs }, { lane: 'follow' });
      if (row === undefined) throw new Error('the store returned no clock');
      return row.horizon;
    },
    // One stream's catch-up, as a request's read.
    tailEvents: (query) => read({ scope: 'one', query }, () => true, 'requests'),
    tailProjects(query) {
      const pairs = new Set(query.scopes.map(pairOf));
      // Only the shared loop asks, for every live stream (and those joining it) at once.
      return read({ scope: 'many', query }, (row) => pairs.has(pairOf({ orgId: row.org_id, projectId: row.project_id })), 'follow');
    },
  };
}

