import type { FeedFilters } from './event-store.js';

/**
 * The events that name a device, ordered by `(org_id, project_id, device_id, occurred_at,
 * id)` (docs/decisions/device-pages.md). A materialized view on the events table fills it
 * on every insert, whoever writes, so nothing but the migrations knows it is there; the
 * feed reads a device's page from it.
 */
export const DEVICE_EVENTS_TABLE = 'events_by_device';

/** The rows of `source` (events, or events_local on a cluster) that name a device, as the device table holds them: the view's SELECT, and the backfill's. */
export const deviceEventsSelect = (source: string, where?: string): string =>
  `SELECT org_id, project_id, occurred_at, id, domain, entity, action, correlation_id, assumeNotNull(device_id) AS device_id,
    fleet_id, payload, source_service, span_id, trace_id, ingested_at
  FROM ${source}
  WHERE device_id IS NOT NULL${where === undefined ? '' : ` AND ${where}`}`;

/**
 * Whether a page is read from the device table: every page with a `device_id` filter,
 * whatever else it filters by. Such a page is one query over the whole range, not a walk
 * of time windows: the device's rows lie side by side, newest last, in each partition.
 */
export const readsByDevice = (filters: FeedFilters): boolean => filters.deviceId !== undefined;

/** The table a page with these filters reads. */
export const pageTable = (filters: FeedFilters): string => (readsByDevice(filters) ? DEVICE_EVENTS_TABLE : 'events');
