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
 * Where each device's events lie in time and how many they are, one row a device once
 * merged (docs/decisions/device-pages.md, "The window"): what sizes a device page's
 * window. Filled by a view as the device table is. The figures only ever widen and
 * grow: copies and replays count again, and nothing lowers them when events go, so the
 * window they size is a guess, never a bound on what a page returns. The second table of
 * spans: its granules hold 256 devices where the first's held 8,192
 * (docs/decisions/device-spans-granules.md).
 */
export const DEVICE_SPANS_TABLE = 'device_spans_v2';

/** Rows a granule of the spans holds: a read of one device's span reads about this many in each part. */
export const DEVICE_SPANS_GRANULE = 256;

/**
 * The spans of earlier versions, in granules of 8,192 rows. This version neither creates
 * nor reads it; where a store has it, its view still fills it, for processes of those
 * versions during a rolling upgrade, and an erasure deletes from it.
 */
export const EARLIER_DEVICE_SPANS_TABLE = 'device_spans';

export const DEVICE_SPANS_COLUMNS = `org_id UUID,
    project_id UUID,
    device_id UUID,
    oldest SimpleAggregateFunction(min, DateTime64(6, 'UTC')),
    newest SimpleAggregateFunction(max, DateTime64(6, 'UTC')),
    events SimpleAggregateFunction(sum, UInt64)`;

export const DEVICE_SPANS_ORDER = 'ORDER BY (org_id, project_id, device_id)';

/** The device spans of the rows of `source` that `where` keeps, one row per device: the view's SELECT, and the backfill's. */
export const deviceSpansSelect = (source: string, where?: string): string =>
  `SELECT org_id, project_id, assumeNotNull(device_id) AS device_id, min(occurred_at) AS oldest, max(occurred_at) AS newest, count() AS events
  FROM ${source}
  WHERE device_id IS NOT NULL${where === undefined ? '' : ` AND ${where}`}
  GROUP BY org_id, project_id, device_id`;

/**
 * Whether a page is read from the device table: every page with a `device_id` filter,
 * whatever else it filters by. Such a page is not a walk of time windows: one window
 * sized from the device's span, and the rest of its range only when that window fell short.
 */
export const readsByDevice = (filters: FeedFilters): boolean => filters.deviceId !== undefined;

/** The table a page with these filters reads. */
export const pageTable = (filters: FeedFilters): string => (readsByDevice(filters) ? DEVICE_EVENTS_TABLE : 'events');

/** The columns that name a page's scope in the table it reads, its sort key's prefix before `occurred_at`. */
export const pageScopeColumns = (filters: FeedFilters): readonly ('org_id' | 'project_id' | 'device_id')[] =>
  readsByDevice(filters) ? ['org_id', 'project_id', 'device_id'] : ['org_id', 'project_id'];
