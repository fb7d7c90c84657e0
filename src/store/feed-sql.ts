import { pageTable } from './device-events.js';
import { EVENT_COLUMNS } from './event-rows.js';
import type { FeedQuery } from './event-store.js';
import type { FeedWindow } from './feed-windows.js';
import { filterConditions } from './filter-sql.js';
import type { SqlParam, SqlParams } from './sql-transport.js';

/**
 * The feed predicate is written `occurred_at <= t AND (occurred_at < t OR id < i)` rather
 * than as a tuple comparison: ClickHouse uses the primary key for this form and reads
 * one granule range, where `(occurred_at, id) < (t, i)` scans the project's whole range.
 */
const KEYSET = `occurred_at <= {after_t:DateTime64(6, 'UTC')} AND (occurred_at < {after_t:DateTime64(6, 'UTC')} OR id < {after_id:UUID})`;

/**
 * Settings of a feed page, measured with 50 concurrent pages on 2 cores
 * (docs/decisions/feed-per-query-settings.md). A page reads a granule or so per part, so its cost
 * is mostly the engine's fixed work per query.
 * - `max_threads = 1`: with two reading streams the reverse read stopped only after each
 *   stream had filled a block, so rows read rose with where granule boundaries fell
 *   (9,344 at 1M events, 19,712 at 10M); one stream reads only the granules the page
 *   needs. Fifty concurrent pages already keep both cores busy.
 * - `use_uncompressed_cache = 1`: pages read the same few newest granules of every part
 *   over and over; kept decompressed, the block of each column a page touches costs no
 *   decompression. It takes effect only on a server with an uncompressed cache
 *   (`uncompressed_cache_size`, sized 0 unless its configuration sets it), and chDB has none.
 * Lazy materialization stays on: turning it off halved rows read on a merged table but
 * doubled a page's time on one of many parts, where each part's last granule is then
 * read in full for every column.
 * Applied with a SETTINGS clause, so both engines (chDB and the server, also behind a
 * Distributed table) and anyone re-sending this SQL run it with the same settings.
 */
export const PAGE_SETTINGS: readonly string[] = ['max_threads = 1', 'use_uncompressed_cache = 1'];

/**
 * The WHERE of one page read, over the whole range (`window` absent: the plain query) or
 * one time window of it (src/store/feed-windows.ts). The window adds `occurred_at` bounds,
 * which prune partitions by their minmax index and parts by the primary key, so a read
 * opens only the parts that hold the project's events in that slice of time.
 */
export function pageConditions(query: Omit<FeedQuery, 'limit'>, window: FeedWindow = {}): { where: string[]; params: Record<string, SqlParam> } {
  const where = ['org_id = {org_id:UUID}', 'project_id = {project_id:UUID}'];
  const params: Record<string, SqlParam> = { org_id: query.orgId, project_id: query.projectId };
  where.push(...filterConditions(query.filters, params));
  if (query.after !== undefined) {
    where.push(KEYSET);
    params['after_t'] = query.after.occurredAt;
    params['after_id'] = query.after.id;
  }
  if (window.from !== undefined) {
    where.push("occurred_at >= {window_from:DateTime64(6, 'UTC')}");
    params['window_from'] = window.from;
  }
  if (window.to !== undefined) {
    where.push("occurred_at < {window_to:DateTime64(6, 'UTC')}");
    params['window_to'] = window.to;
  }
  return { where, params };
}

/**
 * A page's SQL: its conditions (`pageConditions`), read in reverse sort-key order up to its
 * limit, from the events table or, filtered by device, the device table (src/store/device-events.ts).
 */
export function feedSql(query: FeedQuery, window: FeedWindow = {}, columns: readonly string[] = EVENT_COLUMNS): { sql: string; params: SqlParams } {
  const { where, params } = pageConditions(query, window);
  params['limit'] = query.limit;
  // No LIMIT 1 BY id: it made ClickHouse sort the project's whole range instead of
  // reading it in reverse order, so rows read grew with the project. Redelivered copies
  // come back adjacent and listEvents folds them (docs/decisions/feed-table-and-page-query.md).
  const sql = `SELECT ${columns.join(', ')}
    FROM ${pageTable(query.filters)}
    WHERE ${where.join(' AND ')}
    ORDER BY occurred_at DESC, id DESC
    LIMIT {limit:UInt32}
    SETTINGS ${PAGE_SETTINGS.join(', ')}`;
  return { sql, params };
}

/**
 * Whether the project holds any event (whatever the filters) below `before` and at or
 * after `since`: asked once, by a page that spent its windows without filling. Unordered
 * with LIMIT 1, it stops at the first granule it reads.
 */
export function olderEventSql(query: Pick<FeedQuery, 'orgId' | 'projectId' | 'filters'>, before: string): { sql: string; params: SqlParams } {
  const where = ['org_id = {org_id:UUID}', 'project_id = {project_id:UUID}', "occurred_at < {before:DateTime64(6, 'UTC')}"];
  const params: Record<string, SqlParam> = { org_id: query.orgId, project_id: query.projectId, before };
  if (query.filters.since !== undefined) {
    where.push("occurred_at >= {since:DateTime64(6, 'UTC')}");
    params['since'] = query.filters.since;
  }
  const sql = `SELECT 1 AS found FROM events WHERE ${where.join(' AND ')} LIMIT 1 SETTINGS ${PAGE_SETTINGS.join(', ')}`;
  return { sql, params };
}

