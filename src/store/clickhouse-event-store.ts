import type { CanonicalEvent } from '../generated/schema-types.js';
import { EVENT_COLUMNS, fromEventRow, toEventRow, type EventRow } from './event-rows.js';
import type { EventStore, FeedQuery, StoredEvent } from './event-store.js';
import { createClickHouseTail } from './clickhouse-tail.js';
import { filterConditions } from './filter-sql.js';
import { readDistinct } from './fold-copies.js';
import type { SqlParam, SqlParams, SqlTransport } from './sql-transport.js';

/**
 * The feed predicate is written `occurred_at <= t AND (occurred_at < t OR id < i)` rather
 * than as a tuple comparison: ClickHouse uses the primary key for this form and reads
 * one granule range, where `(occurred_at, id) < (t, i)` scans the project's whole range.
 */
const KEYSET = `occurred_at <= {after_t:DateTime64(6, 'UTC')} AND (occurred_at < {after_t:DateTime64(6, 'UTC')} OR id < {after_id:UUID})`;

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
  // No LIMIT 1 BY id: it made ClickHouse sort the project's whole range instead of
  // reading it in reverse order, so rows read grew with the project. Redelivered copies
  // come back adjacent and listEvents folds them (docs/decisions/feed-storage.md).
  const sql = `SELECT ${EVENT_COLUMNS.join(', ')}
    FROM events
    WHERE ${where.join(' AND ')}
    ORDER BY occurred_at DESC, id DESC
    LIMIT {limit:UInt32}`;
  return { sql, params };
}

export function createClickHouseEventStore(transport: SqlTransport): EventStore {
  return {
    async insertEvents(events: readonly CanonicalEvent[]) {
      await transport.insert('events', events.map(toEventRow));
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

