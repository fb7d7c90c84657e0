import type { CanonicalEvent } from '../generated/schema-types.js';
import { EVENT_COLUMNS, fromEventRow, toEventRow, type EventRow } from './event-rows.js';
import type { EventStore, FeedQuery, StoredEvent } from './event-store.js';
import type { SqlParams, SqlTransport } from './sql-transport.js';

/**
 * The feed predicate is written `occurred_at <= t AND (occurred_at < t OR id < i)` rather
 * than as a tuple comparison: ClickHouse uses the primary key for this form and reads
 * one granule range, where `(occurred_at, id) < (t, i)` scans the project's whole range.
 */
const KEYSET = `occurred_at <= {after_t:DateTime64(6, 'UTC')} AND (occurred_at < {after_t:DateTime64(6, 'UTC')} OR id < {after_id:UUID})`;

export function feedSql(query: FeedQuery): { sql: string; params: SqlParams } {
  const where = ['org_id = {org_id:UUID}', 'project_id = {project_id:UUID}'];
  const params: Record<string, string | number> = {
    org_id: query.orgId,
    project_id: query.projectId,
    limit: query.limit,
  };
  const f = query.filters;
  // Each filter that is set adds its condition, with its value bound as a parameter.
  const filters: readonly [value: string | undefined, name: string, condition: string][] = [
    [f.domain, 'domain', 'domain = {domain:String}'],
    [f.entity, 'entity', 'entity = {entity:String}'],
    [f.action, 'action', 'action = {action:String}'],
    [f.deviceId, 'device_id', 'device_id = {device_id:UUID}'],
    [f.fleetId, 'fleet_id', 'fleet_id = {fleet_id:UUID}'],
    [f.since, 'since', "occurred_at >= {since:DateTime64(6, 'UTC')}"],
    [f.until, 'until', "occurred_at < {until:DateTime64(6, 'UTC')}"],
  ];
  for (const [value, name, condition] of filters) {
    if (value === undefined) continue;
    where.push(condition);
    params[name] = value;
  }
  if (query.after !== undefined) {
    where.push(KEYSET);
    params['after_t'] = query.after.occurredAt;
    params['after_id'] = query.after.id;
  }
  const sql = `SELECT ${EVENT_COLUMNS.join(', ')}
    FROM events
    WHERE ${where.join(' AND ')}
    ORDER BY occurred_at DESC, id DESC
    LIMIT 1 BY id
    LIMIT {limit:UInt32}`;
  return { sql, params };
}

export function createClickHouseEventStore(transport: SqlTransport): EventStore {
  return {
    async insertEvents(events: readonly CanonicalEvent[]) {
      await transport.insert('events', events.map(toEventRow));
    },
    async listEvents(query: FeedQuery): Promise<StoredEvent[]> {
      const { sql, params } = feedSql(query);
      const rows = await transport.query<EventRow>(sql, params);
      return rows.map((row) => ({
        event: fromEventRow(row),
        position: { occurredAt: row.occurred_at, id: row.id },
      }));
    },
  };
}

