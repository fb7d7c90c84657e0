import { EVENT_COLUMNS, type EventRow } from './event-rows.js';
import type { FeedQuery } from './event-store.js';
import { PAGE_SETTINGS, pageConditions } from './feed-sql.js';
import { filterConditions } from './filter-sql.js';
import type { ScopeSpan } from './event-spans.js';
import type { SqlParam, SqlParams, SqlTransport } from './sql-transport.js';

/**
 * A page's first read, in one query (docs/decisions/feed-first-read.md): the scope's span
 * from event_spans, a window sized from it, and the page's rows in that window.
 * - The span (a scalar subquery of a few rows) says whether the scope has any event, and
 *   where its newest lies: a scope with none (an empty project, a filter that matches
 *   nothing) gets a window past any event, which opens no part of the events table; a
 *   scope idle for a year gets a window that starts at its newest event, not at now.
 * - The window reaches at most `wideUs` below that start, never below the plan's reach
 *   nor the scope's oldest event. Within it, an ordered read of the sort key alone (LIMIT
 *   the page) finds the instant of the page's last row; the page's own read then covers
 *   only that instant and above, the narrowest window that holds the page, or the whole
 *   wide window when it holds less than a page.
 * Every edge is a scalar the engine knows before it plans the reads, so the partitions
 * below them are never opened. A row that is not an event carries the span and the
 * window's edge, so that a page that holds nothing still learns them from this query.
 */

/** Past any event DateTime64 holds: the window's edge when the scope has no span (or none above the reach), so that the read opens no partition. */
export const NO_WINDOW = '2299-12-31 23:59:59.000000';

/** What the first read needs besides the page's query. */
export interface FirstReadBounds {
  /** The newest instant the page can hold events below, as store text: windowsStart. */
  readonly top: string;
  /** How far below the window's start (the top, or the scope's newest event below it) the near window reaches, in microseconds. */
  readonly wideUs: number;
  /** The most the far window, read when the near one holds less than a page, may reach below the start, in microseconds. */
  readonly farUs: number;
  /** The lowest edge the page's windows may have (the plan's reach), or undefined when it has none. */
  readonly reach: string | undefined;
}

export interface FirstRead {
  /** Up to `query.limit` raw rows, copies included, newest first. */
  readonly rows: EventRow[];
  /** The scope's span; undefined when it has never written an event matching the filters the span keeps. */
  readonly span: ScopeSpan | undefined;
  /** The lower edge of the window read; undefined when nothing was read (no span, or its newest event lies below the reach). */
  readonly from: string | undefined;
}

interface FirstReadRow extends EventRow {
  readonly page_row: number;
  readonly span_oldest: string | null;
  readonly span_newest: string | null;
  readonly span_scopes: number | string | null;
  readonly window_from: string | null;
}

const DT = "DateTime64(6, 'UTC')";
/** As a paced window (src/store/feed-windows.ts): twice what the page still needs at the rate found. */
const PACE_MARGIN = 2;

export function firstReadSql(query: FeedQuery, bounds: FirstReadBounds): { sql: string; params: SqlParams } {
  const { where, params } = pageConditions(query);
  const spanParams: Record<string, SqlParam> = {};
  const { domain, entity, action } = query.filters;
  // The span is kept by the filters of event_spans' key only; a device or fleet filter
  // narrows within it, so for those pages it is a bound, never an answer.
  const spanWhere = ['org_id = {org_id:UUID}', 'project_id = {project_id:UUID}', ...filterConditions({ domain, entity, action }, spanParams)];
  const all: Record<string, SqlParam> = { ...params, ...spanParams, limit: query.limit, top: bounds.top, wide_us: bounds.wideUs, far_us: Math.max(bounds.wideUs, bounds.farUs) };
  if (bounds.reach !== undefined) all['reach'] = bounds.reach;
  const reach = bounds.reach === undefined ? undefined : `{reach:${DT}}`;
  const lowest = reach === undefined ? 'span.1' : `greatest(span.1, ${reach})`;
  const none = `span.3 = 0${reach === undefined ? '' : ` OR span.2 < ${reach}`}`;
  const noWindow = `toDateTime64('${NO_WINDOW}', 6, 'UTC')`;
  const conditions = where.join(' AND ');
  /** The count and the oldest instant of the page's newest `limit` rows at or above `from`: the sort key only, stopped at the limit. */
  const edgeOf = (from: string) => `(SELECT tuple(count(), min(occurred_at)) FROM (
        SELECT occurred_at FROM events WHERE ${conditions} AND occurred_at >= ${from}
        ORDER BY occurred_at DESC, id DESC LIMIT {limit:UInt32}
      ))`;
  const us = (t: string) => `toUnixTimestamp64Micro(${t})`;
  // The far window, only when the near one holds less than a page: as wide as the near
  // window's rate says the page needs, twice over (as a paced window is,
  // src/store/feed-windows.ts), at most {far_us}; the widest when the near one held nothing.
  // Otherwise its edge is past any event, and its read opens no part.
  const paced = `if(near.1 = 0, {far_us:Int64}, least({far_us:Int64}, greatest({wide_us:Int64}, intDiv(${us('start')} - ${us('near_from')}, toInt64(near.1)) * {limit:UInt32} * ${PACE_MARGIN})))`;
  const sql = `WITH
      (SELECT tuple(min(oldest), max(newest), count()) FROM event_spans WHERE ${spanWhere.join(' AND ')}) AS span,
      least({top:${DT}}, span.2) AS start,
      if(${none}, ${noWindow}, greatest(subtractMicroseconds(start, {wide_us:Int64}), ${lowest})) AS near_from,
      ${edgeOf('near_from')} AS near,
      if(${none} OR near.1 >= {limit:UInt32} OR near_from <= ${lowest}, ${noWindow}, greatest(subtractMicroseconds(start, ${paced}), ${lowest})) AS far_from,
      ${edgeOf('far_from')} AS far,
      multiIf(near.1 >= {limit:UInt32}, near.2, far_from = ${noWindow}, near_from, far.1 >= {limit:UInt32}, far.2, far_from) AS window_edge
    SELECT * FROM (
      SELECT ${EVENT_COLUMNS.join(', ')}, 1 AS page_row, NULL AS span_oldest, NULL AS span_newest, NULL AS span_scopes, NULL AS window_from
      FROM events
      WHERE ${conditions} AND occurred_at >= window_edge
      ORDER BY occurred_at DESC, id DESC
      LIMIT {limit:UInt32}
      UNION ALL
      SELECT ${EVENT_COLUMNS.map((c) => `NULL AS ${c}`).join(', ')}, 0, span.1, span.2, span.3, window_edge
    )
    ORDER BY page_row, occurred_at DESC, id DESC
    SETTINGS ${[...PAGE_SETTINGS, "date_time_output_format = 'simple'"].join(', ')}`;
  return { sql, params: all };
}

/** The page's first read (firstReadSql): its rows, the scope's span, and where the window it read began. */
export async function readFirst(transport: SqlTransport, query: FeedQuery, bounds: FirstReadBounds): Promise<FirstRead> {
  const { sql, params } = firstReadSql(query, bounds);
  const found = await transport.query<FirstReadRow>(sql, params);
  const marker = found.find((row) => Number(row.page_row) === 0);
  if (marker === undefined || marker.span_oldest === null || marker.span_newest === null || marker.window_from === null) {
    throw new Error('the first read of a page returned no span row');
  }
  const rows: EventRow[] = [];
  for (const row of found) {
    if (Number(row.page_row) !== 1) continue;
    const { page_row: _r, span_oldest: _o, span_newest: _n, span_scopes: _s, window_from: _w, ...event } = row;
    rows.push(event);
  }
  const span = Number(marker.span_scopes) === 0 ? undefined : { oldest: marker.span_oldest, newest: marker.span_newest };
  return { rows, span, from: marker.window_from === NO_WINDOW ? undefined : marker.window_from };
}
