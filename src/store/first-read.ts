import { EVENT_COLUMNS, type EventRow } from './event-rows.js';
import type { FeedQuery } from './event-store.js';
import type { ScopeSpan } from './event-spans.js';
import { PAGE_SETTINGS, pageConditions } from './feed-sql.js';
import { filterConditions } from './filter-sql.js';
import type { SqlParam, SqlParams, SqlTransport } from './sql-transport.js';

/**
 * A page's first read in one query, for a read that goes to the store alone
 * (docs/decisions/feed-first-read.md): the scope's span and count from event_spans as a
 * scalar, a window sized from them, and the page's rows in that window, all in the one row
 * the query answers, so that a page that finds nothing still learns the span and the edge.
 *
 * The window starts at the scope's newest event (or the page's top, when that is lower)
 * and reaches down by the time the scope takes, at its mean rate, to write twice what the
 * page asks (a fleet's page: sixteen times, FLEET_SHARE), plus a second; never below the scope's oldest event nor the plan's reach. A
 * scope with no span, or whose newest event lies below the reach, gets an edge past any
 * event: the read opens no part of the events table.
 */

/** Past any event DateTime64 holds: the window's edge when the read should open no part. */
export const NO_WINDOW = '2299-12-31 23:59:59.000000';

/** How many times over the window holds, at the scope's mean rate, what the page asks for; as a paced window (src/store/feed-windows.ts). */
const RATE_MARGIN = 2;
const LEAST_WIDTH_US = 1_000_000;
/**
 * A fleet filter narrows within its span, which counts the project's events (spans are not
 * kept by fleet): its window is sized as if the fleet held this share of them, an eighth.
 * Even at the largest page that is 3,216 of the project's rows, within a granule or two of
 * the events table, so it reads little more than the narrower window would; a fleet of an
 * eighth or more fills its page in this one read, and a smaller one walks on at the rate
 * it found.
 */
const FLEET_SHARE = 8;

export interface FirstReadBounds {
  /** The newest instant the page can hold events below (windowsStart), as store text. */
  readonly top: string;
  /** The window's width, in microseconds, where the span has no count yet (spans written before the count, until their backfill). */
  readonly widthUs: number;
  /** The lowest edge any window of the page may have (the plan's reach); undefined when none. */
  readonly reach: string | undefined;
}

export interface FirstRead {
  /** Up to the query's limit of raw rows, copies included, in feed order. */
  readonly rows: EventRow[];
  /** The scope's span; undefined when no event of the scope (its project, domain, entity, action) was ever written. */
  readonly span: ScopeSpan | undefined;
  /** The window's lower edge; undefined when the read opened none (no span, or the span's newest event below the reach). */
  readonly from: string | undefined;
}

/** The one row a first read answers: the span, the window's edge and the page's rows, each `[position, ...EVENT_COLUMNS]`. */
interface FirstReadRow {
  readonly span_oldest: string;
  readonly span_newest: string;
  readonly span_scopes: number | string;
  readonly window_from: string;
  readonly rows: readonly (readonly unknown[])[];
}

const DT = "DateTime64(6, 'UTC')";
const us = (t: string) => `toUnixTimestamp64Micro(${t})`;

export function firstReadSql(query: FeedQuery, bounds: FirstReadBounds): { sql: string; params: SqlParams } {
  const { where, params } = pageConditions(query);
  const { domain, entity, action } = query.filters;
  // The span is kept by the scope's project, domain, entity and action; a fleet filter
  // narrows within it, so for a fleet page it is a bound, and its rate the project's.
  const spanWhere = ['org_id = {org_id:UUID}', 'project_id = {project_id:UUID}', ...filterConditions({ domain, entity, action }, params)];
  const all: Record<string, SqlParam> = { ...params, limit: query.limit, top: bounds.top, width_us: bounds.widthUs };
  if (bounds.reach !== undefined) all['reach'] = bounds.reach;
  const none = `span.3 = 0${bounds.reach === undefined ? '' : ` OR span.2 < {reach:${DT}}`}`;
  const lowest = bounds.reach === undefined ? 'span.1' : `greatest(span.1, {reach:${DT}})`;
  const margin = query.filters.fleetId === undefined ? RATE_MARGIN : RATE_MARGIN * FLEET_SHARE;
  const rateWidth = `intDiv(${us('span.2')} - ${us('span.1')}, greatest(span.4, 1)) * {limit:UInt32} * ${margin} + ${LEAST_WIDTH_US}`;
  // One row whatever the page holds: an aggregate over the page's read, so that a page that
  // holds nothing still learns the span and the edge (a UNION ALL of a row of its own cost
  // the engine a second branch to plan, about a third more). `n` keeps the read's order.
  const sql = `WITH
      (SELECT tuple(min(oldest), max(newest), count(), sum(events)) FROM event_spans WHERE ${spanWhere.join(' AND ')}) AS span,
      if(span.4 > 0, ${rateWidth}, {width_us:Int64}) AS width,
      if(${none}, toDateTime64('${NO_WINDOW}', 6, 'UTC'), greatest(subtractMicroseconds(least({top:${DT}}, span.2), width), ${lowest})) AS edge
    SELECT span.1 AS span_oldest, span.2 AS span_newest, span.3 AS span_scopes, edge AS window_from, groupArray(tuple(n, ${EVENT_COLUMNS.join(', ')})) AS rows
    FROM (
      SELECT rowNumberInAllBlocks() AS n, *
      FROM (
        SELECT ${EVENT_COLUMNS.join(', ')}
        FROM events
        WHERE ${where.join(' AND ')} AND occurred_at >= edge
        ORDER BY occurred_at DESC, id DESC
        LIMIT {limit:UInt32}
      )
    )
    SETTINGS ${[...PAGE_SETTINGS, "date_time_output_format = 'simple'"].join(', ')}`;
  return { sql, params: all };
}

/** The page's first read (firstReadSql): its raw rows, the scope's span, and where the window it read began. */
export async function readFirst(transport: SqlTransport, query: FeedQuery, bounds: FirstReadBounds): Promise<FirstRead> {
  const { sql, params } = firstReadSql(query, bounds);
  const [found] = await transport.query<FirstReadRow>(sql, params);
  if (found === undefined) throw new Error("a page's first read came back without its row");
  const rows = [...found.rows]
    .sort((a, b) => Number(a[0]) - Number(b[0]))
    .map((values) => Object.fromEntries(EVENT_COLUMNS.map((column, i) => [column, values[i + 1]])) as unknown as EventRow);
  const span = Number(found.span_scopes) === 0 ? undefined : { oldest: found.span_oldest, newest: found.span_newest };
  return { rows, span, from: found.window_from === NO_WINDOW ? undefined : found.window_from };
}
