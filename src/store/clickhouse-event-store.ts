import { EVENT_COLUMNS, fromEventRow, type EventRow } from './event-rows.js';
import { eventRowText } from './event-row-text.js';
import type { EventStore, FeedQuery, FeedSlice } from './event-store.js';
import { storeTextMs, WINDOW_PLAN, windowsStart, windowWalk, type FeedWindow, type WindowPlan } from './feed-windows.js';
import { createWindowHints, type WindowHints } from './window-hints.js';
import { createClickHouseTail } from './clickhouse-tail.js';
import { splitByPartitions } from './event-batches.js';
import { filterConditions } from './filter-sql.js';
import { readDistinct } from './fold-copies.js';
import type { SqlParam, SqlParams, SqlTransport } from './sql-transport.js';
import { NIL_UUID } from '../ids/uuid.js';

/**
 * The feed predicate is written `occurred_at <= t AND (occurred_at < t OR id < i)` rather
 * than as a tuple comparison: ClickHouse uses the primary key for this form and reads
 * one granule range, where `(occurred_at, id) < (t, i)` scans the project's whole range.
 */
const KEYSET = `occurred_at <= {after_t:DateTime64(6, 'UTC')} AND (occurred_at < {after_t:DateTime64(6, 'UTC')} OR id < {after_id:UUID})`;

/**
 * Settings of a feed page, measured with 50 concurrent pages on 2 cores
 * (docs/decisions/feed-storage.md). A page reads a granule or so per part, so its cost
 * is mostly the engine's fixed work per query.
 * - `max_threads = 1`: with two reading streams the reverse read stopped only after each
 *   stream had filled a block, so rows read rose with where granule boundaries fell
 *   (9,344 at 1M events, 19,712 at 10M); one stream reads only the granules the page
 *   needs. Fifty concurrent pages already keep both cores busy.
 * Lazy materialization stays on: turning it off halved rows read on a merged table but
 * doubled a page's time on one of many parts, where each part's last granule is then
 * read in full for every column.
 * Applied with a SETTINGS clause, so both engines (chDB and the server, also behind a
 * Distributed table) and anyone re-sending this SQL run it with the same settings.
 */
const FEED_SETTINGS = ['max_threads = 1'];
/**
 * The by_device projection serves only the device_id filter; without that filter,
 * weighing it is planning time spent on every page for nothing.
 */
const WITHOUT_PROJECTIONS = 'optimize_use_projections = 0';

/**
 * An insert into the events table that carries no row: it takes the inserts' own path (the
 * client, the engine, the table being there and writable) and leaves nothing behind, so it
 * can be sent whenever the consumer needs to ask. A row of its own would show in a feed.
 */
const PROBE_WRITE = 'INSERT INTO events SELECT * FROM events WHERE 0';

/**
 * A page's SQL, over the whole range (`window` absent: the plain query) or one time window
 * of it (src/store/feed-windows.ts). The window adds `occurred_at` bounds, which prune
 * partitions by their minmax index and parts by the primary key, so the reverse read opens
 * only the parts that hold the project's events in that slice of time.
 */
export function feedSql(query: FeedQuery, window: FeedWindow = {}, columns: readonly string[] = EVENT_COLUMNS): { sql: string; params: SqlParams } {
  const where = ['org_id = {org_id:UUID}', 'project_id = {project_id:UUID}'];
  const params: Record<string, SqlParam> = {
    org_id: query.orgId,
    project_id: query.projectId,
    limit: query.limit,
  };
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
  const settings = query.filters.deviceId === undefined ? [...FEED_SETTINGS, WITHOUT_PROJECTIONS] : FEED_SETTINGS;
  // No LIMIT 1 BY id: it made ClickHouse sort the project's whole range instead of
  // reading it in reverse order, so rows read grew with the project. Redelivered copies
  // come back adjacent and listEvents folds them (docs/decisions/feed-storage.md).
  const sql = `SELECT ${columns.join(', ')}
    FROM events
    WHERE ${where.join(' AND ')}
    ORDER BY occurred_at DESC, id DESC
    LIMIT {limit:UInt32}
    SETTINGS ${settings.join(', ')}`;
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
  const sql = `SELECT 1 AS found FROM events WHERE ${where.join(' AND ')} LIMIT 1 SETTINGS ${[...FEED_SETTINGS, WITHOUT_PROJECTIONS].join(', ')}`;
  return { sql, params };
}

/**
 * The occurred_at of the newest event of the page's query (filters, cursor) in `window`,
 * or undefined when it holds none: the page's own SQL, reading the sort key only, LIMIT 1.
 */
async function newestEventIn(transport: SqlTransport, query: FeedQuery, window: FeedWindow): Promise<string | undefined> {
  const { sql, params } = feedSql({ ...query, limit: 1 }, window, ['occurred_at']);
  const [row] = await transport.query<{ occurred_at: string }>(sql, params);
  return row?.occurred_at;
}

export interface FeedReadOptions {
  /** The clock the first window starts below when a page has no cursor or `until`. */
  readonly now?: () => number;
  readonly windows?: WindowPlan;
  /** How wide recent full pages of each scope were (src/store/window-hints.ts); one per store by default. */
  readonly hints?: WindowHints;
}

export function createClickHouseEventStore(transport: SqlTransport, options: FeedReadOptions = {}): EventStore {
  const now = options.now ?? Date.now;
  const plan = options.windows ?? WINDOW_PLAN;
  const hints = options.hints ?? createWindowHints();
  const newestBelow = (query: FeedQuery, window: FeedWindow) => newestEventIn(transport, query, window);
  return {
    async insertEvents(events) {
      for (const part of splitByPartitions(events)) await transport.insert('events', part.map(eventRowText));
    },
    async probeWrite() {
      await transport.command(PROBE_WRITE);
    },
    async listEvents(query: FeedQuery): Promise<FeedSlice> {
      const nowMs = now();
      const walk = windowWalk(query, nowMs, hints.plan(query, plan));
      const rows: EventRow[] = [];
      let lowest: string | undefined;
      let skipped = false;
      for (let window = walk.next(); window !== undefined; window = walk.next()) {
        const read = (after: FeedQuery['after'], limit: number) => {
          const { sql, params } = feedSql({ ...query, after, limit }, window);
          return transport.query<EventRow>(sql, params);
        };
        const found = await readDistinct(read, query.after, query.limit - rows.length, rows.at(-1));
        rows.push(...found);
        lowest = window.from;
        if (rows.length >= query.limit || lowest === undefined) break;
        if (found.length > 0) {
          // The page's total so far, not this window's: the rate is over all the windows read.
          walk.paceFor(rows.length, query.limit - rows.length);
          continue;
        }
        if (!walk.canSkip) continue;
        // An empty window: one ordered LIMIT 1 finds the newest matching event below it
        // within the page's reach, so a page skips empty time (a new or idle project, a
        // filter that matches nothing) in one query instead of a window per stretch.
        const newest = await newestBelow(query, { ...(walk.reach === undefined ? {} : { from: walk.reach }), to: lowest });
        if (newest === undefined) {
          lowest = walk.reach;
          break;
        }
        skipped = true;
        walk.skipTo(storeTextMs(newest));
      }
      const events = rows.map((row) => ({ event: fromEventRow(row), position: { occurredAt: row.occurred_at, id: row.id } }));
      const last = rows.at(-1);
      // A page that skipped a gap says nothing about the scope's rate.
      if (rows.length >= query.limit && last !== undefined && !skipped) hints.learn(query, windowsStart(query, nowMs) - storeTextMs(last.occurred_at), plan);
      if (rows.length >= query.limit || lowest === undefined) return { events };
      // The page stopped above the range's end: go on below only if the project has anything there.
      const { sql, params } = olderEventSql(query, lowest);
      const older = await transport.query<{ found: number }>(sql, params);
      return older.length === 0 ? { events } : { events, resumeAfter: { occurredAt: lowest, id: NIL_UUID } };
    },
    ...createClickHouseTail(transport),
  };
}
