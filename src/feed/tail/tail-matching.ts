import type { CanonicalEvent } from '../../generated/schema-types.js';
import { NIL_UUID } from '../../ids/uuid.js';
import type { TailedEvent, TailFilters, TailPosition } from '../../store/event-store.js';
import type { TailMessage } from './live-tail-types.js';
import { encodeTailPosition } from './tail-position.js';

/** Whether the filters take the event; the same rules as filter-sql.ts, on the event's stored (lower-case) ids. */
export function matchesFilters(filters: TailFilters, event: CanonicalEvent): boolean {
  return (
    (filters.domain === undefined || filters.domain === event.domain) &&
    (filters.entity === undefined || filters.entity === event.entity) &&
    (filters.action === undefined || filters.action === event.action) &&
    (filters.deviceId === undefined || filters.deviceId === event.device_id) &&
    (filters.fleetId === undefined || filters.fleetId === event.fleet_id)
  );
}

/**
 * Whether `p`, a position on a horizon (its id is NIL), is at or after `shared`. Positions
 * on a horizon are the only ones a stream joins the shared read at, so no UUID has to be
 * ordered here: (t, NIL) sorts before every event ingested at t.
 */
export function horizonAtOrAfter(p: TailPosition, shared: TailPosition): boolean {
  return p.ingestedAt > shared.ingestedAt || (p.ingestedAt === shared.ingestedAt && shared.id === NIL_UUID);
}

/** Whether an event lies after (t, NIL): ingested after t, or at t with any id but NIL. */
export function afterHorizon(event: TailPosition, p: TailPosition): boolean {
  return event.ingestedAt > p.ingestedAt || (event.ingestedAt === p.ingestedAt && event.id !== NIL_UUID);
}

export const projectKey = (orgId: string, projectId: string) => `${orgId}/${projectId}`;

export function scopeOf(key: string): { orgId: string; projectId: string } {
  const [orgId, projectId] = key.split('/') as [string, string];
  return { orgId, projectId };
}

export function messagesOf(events: readonly TailedEvent[]): TailMessage[] {
  return events.map((e) => ({ id: encodeTailPosition(e.position), event: e.event, json: JSON.stringify(e.event) }));
}
