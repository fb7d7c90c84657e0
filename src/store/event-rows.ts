import type { CanonicalEvent } from '../generated/schema-types.js';
import type { StorableEvent } from './event-store.js';
import { fromStoreTimestamp, toStoreTimestamp } from './timestamps.js';

/** One row of the events table, as JSONEachRow writes and reads it. */
export interface EventRow {
  id: string;
  org_id: string;
  project_id: string;
  domain: string;
  entity: string;
  action: string;
  occurred_at: string;
  correlation_id: string | null;
  device_id: string | null;
  fleet_id: string | null;
  /** The event's payload as JSON text: ClickHouse stores it verbatim, the feed parses it back. */
  payload: string | null;
  source_service: string | null;
  span_id: string | null;
  trace_id: string | null;
}

export const EVENT_COLUMNS = [
  'id',
  'org_id',
  'project_id',
  'domain',
  'entity',
  'action',
  'occurred_at',
  'correlation_id',
  'device_id',
  'fleet_id',
  'payload',
  'source_service',
  'span_id',
  'trace_id',
] as const satisfies readonly (keyof EventRow)[];

/**
 * A row as an insert writes it. The payload goes as the object itself: ClickHouse reads
 * a JSON object given for a String column as its JSON text
 * (input_format_json_read_objects_as_strings, which the transports set on every insert),
 * so the stored text is what JSON.stringify(payload) gives, without encoding the payload
 * once and then escaping it again inside the row.
 */
export type EventInsertRow = Omit<EventRow, 'payload'> & { payload: Record<string, unknown> | null };

/** `storedAt` is occurred_at as the store's text (toStoreTimestamp), converted once by whoever validated the event. */
export function toEventRow(event: CanonicalEvent, storedAt: string): EventInsertRow {
  return {
    id: event.id.toLowerCase(),
    org_id: event.org_id.toLowerCase(),
    project_id: event.project_id.toLowerCase(),
    domain: event.domain,
    entity: event.entity,
    action: event.action,
    occurred_at: storedAt,
    correlation_id: event.correlation_id?.toLowerCase() ?? null,
    device_id: event.device_id?.toLowerCase() ?? null,
    fleet_id: event.fleet_id?.toLowerCase() ?? null,
    payload: event.payload ?? null,
    source_service: event.source_service ?? null,
    span_id: event.span_id ?? null,
    trace_id: event.trace_id ?? null,
  };
}

/** An event this process built or read, with its timestamp converted; throws TimestampError when the store cannot hold it. */
export function storableEvent(event: CanonicalEvent): StorableEvent {
  return { event, head: event, storedAt: toStoreTimestamp(event.occurred_at) };
}

/** Every field of the item is present; the optional ones are null when the event had none. */
export function fromEventRow(row: EventRow): CanonicalEvent {
  return {
    id: row.id,
    org_id: row.org_id,
    project_id: row.project_id,
    domain: row.domain,
    entity: row.entity,
    action: row.action,
    occurred_at: fromStoreTimestamp(row.occurred_at),
    correlation_id: row.correlation_id,
    device_id: row.device_id,
    fleet_id: row.fleet_id,
    payload: row.payload === null ? null : (JSON.parse(row.payload) as Record<string, unknown>),
    source_service: row.source_service,
    span_id: row.span_id,
    trace_id: row.trace_id,
  };
}
