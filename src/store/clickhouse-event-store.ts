import { EVENT_COLUMNS, fromEventRow, type EventRow } from './event-rows.js';
import { eventRowText } from './event-row-text.js';
import type { EventStore, FeedQuery, StoredEvent } from './event-store.js';
import { createClickHouseTail } from './clickhouse-tail.js';
import { splitByPartitions } from './event-batches.js';
import { filterConditions } from './filter-sql.js';
import { readDistinct } from './fold-copies.js';
import type { SqlParam, SqlParams, SqlTransport } from './sql-transport.js';

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

export function feedSql(query: FeedQuery): { sql: string; params: SqlParams } {
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
  const settings = query.filters.deviceId === undefined ? [...FEED_SETTINGS, WITHOUT_PROJECTIONS] : FEED_SETTINGS;
  // No LIMIT 1 BY id: it made ClickHouse sort the project's whole range instead of
  // reading it in reverse order, so rows read grew with the project. Redelivered copies
  // come back adjacent and listEvents folds them (docs/decisions/feed-storage.md).
  const sql = `SELECT ${EVENT_COLUMNS.join(', ')}
    FROM events
    WHERE ${where.join(' AND ')}
    ORDER BY occurred_at DESC, id DESC
    LIMIT {limit:UInt32}
    SETTINGS ${settings.join(', ')}`;
  return { sql, params };
}

export function createClickHouseEventStore(transport: SqlTransport): EventStore {
  return {
    async insertEvents(events) {
      for (const part of splitByPartitions(events)) await transport.insert('events', part.map(eventRowText));
    },
    async probeWrite() {
      await transport.command(PROBE_WRITE);
    },
    async listEvents(query: FeedQuery): Promise<StoredEvent[]> {
      const read = (after: FeedQuery['after'], limit: number) => {
        const { sql, params } = feedSql({ ...query, after, limit });
        return transport.query<EventRow>(sql, params);
      };
      const rows = await readDistinct(read, query.after, query.limit);
      return rows.map((row) => ({
        event: fromEventRow(row),
        position: { occurredAt: row.occurred_at, id: row.id },
      }));
    },
    ...createClickHouseTail(transport),
  };
}

