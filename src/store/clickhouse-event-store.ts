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
  const { domain, entity, action, deviceId, fleetId, since, until } = query.filters;
  if (domain !== undefined) {
    where.push('domain = {domain:String}');
    params['domain'] = domain;
  }
  if (entity !== undefined) {
    where.push('entity = {entity:String}');
    params['entity'] = entity;
  }
  if (action !== undefined) {
    where.push('action = {action:String}');
    params['action'] = action;
  }
  if (deviceId !== undefined) {
    where.push('device_id = {device_id:UUID}');
    params['device_id'] = deviceId;
  }
  if (fleetId !== undefined) {
    where.push('fleet_id = {fleet_id:UUID}');
    params['fleet_id'] = fleetId;
  }
  if (since !== undefined) {
    where.push("occurred_at >= {since:DateTime64(6, 'UTC')}");
    params['since'] = since;
  }
  if (until !== undefined) {
    where.push("occurred_at < {until:DateTime64(6, 'UTC')}");
    params['until'] = until;
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

