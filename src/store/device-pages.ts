import { NIL_UUID } from '../ids/uuid.js';
import type { PageRead } from './batched-page-reads.js';
import { DEVICE_EVENTS_TABLE, DEVICE_SPANS_TABLE } from './device-events.js';
import type { DeviceSpan, DeviceSpanRead } from './device-span-reads.js';
import { EVENT_COLUMNS, type EventRow } from './event-rows.js';
import type { FeedQuery } from './event-store.js';
import { PAGE_SETTINGS, pageConditions } from './feed-sql.js';
import { msStoreText, storeTextMs, windowsStart, type WindowPlan } from './feed-windows.js';
import { readDistinct, type FeedRowKey } from './fold-copies.js';
import type { SqlParams, SqlTransport } from './sql-transport.js';
import { microsStoreText, storeTextMicros } from './timestamps.js';
import type { WindowHints } from './window-hints.js';

/**
 * How many times over the window holds, at the device's mean rate, the events its page asks
 * for, and the least it spans: rates vary, and a window that falls short costs a second read.
 */
const WINDOW_MARGIN = 2;
const LEAST_WIDTH_US = 1_000_000;
/** Past any event DateTime64 holds: the window's edge when the device has no span, so that it opens no partition. */
const NO_WINDOW = "toDateTime64('2299-12-31 23:59:59', 6, 'UTC')";

const SPAN_OF_DEVICE = `FROM ${DEVICE_SPANS_TABLE} WHERE org_id = {org_id:UUID} AND project_id = {project_id:UUID} AND device_id = {device_id:UUID}`;

/** A row of a window read: the event, with the window's lower edge and the device's oldest event as the span gave them. */
export interface WindowRow extends EventRow {
  readonly window_from: string;
  readonly device_oldest: string;
}

/** The newest instant the page can hold, as its own bounds give it (the cursor, `until`); the span's newest event bounds it too, in SQL. */
function pageTop(query: FeedQuery): string {
  const tops = [query.after?.occurredAt, query.filters.until].filter((t): t is string => t !== undefined);
  if (tops.length === 0) return '2299-12-31 23:59:59.999999';
  return tops.reduce((a, b) => (storeTextMs(a) <= storeTextMs(b) ? a : b));
}

/**
 * A device's page within one window: from the page's top (its cursor or `until`, or the
 * device's newest event) down by the time the device takes, at its mean rate over its
 * span, to write WINDOW_MARGIN times the events asked for, and never below its oldest
 * event. The window's edge is a scalar subquery of the device's span, so the engine knows
 * it before it plans the read: the partitions below it are never opened. Each row says
 * where the window began and where the device's events begin, so a short page knows
 * whether the window held the rest of the device's range.
 */
export function deviceWindowSql(query: FeedQuery): { sql: string; params: SqlParams } {
  const { where, params } = pageConditions(query);
  params['limit'] = query.limit;
  params['top'] = pageTop(query);
  const top = "least(max(newest), {top:DateTime64(6, 'UTC')})";
  const reach = `greatest(toUnixTimestamp64Micro(${top}) - toUnixTimestamp64Micro(min(oldest)), 0)`;
  const width = `least(intDiv(toUnixTimestamp64Micro(max(newest)) - toUnixTimestamp64Micro(min(oldest)), greatest(sum(events), 1)) * {limit:UInt32} * ${WINDOW_MARGIN} + ${LEAST_WIDTH_US}, ${reach})`;
  const sql = `WITH (
      SELECT tuple(if(sum(events) = 0, ${NO_WINDOW}, subtractMicroseconds(${top}, ${width})), min(oldest))
      ${SPAN_OF_DEVICE}
    ) AS span
    SELECT ${EVENT_COLUMNS.join(', ')}, span.1 AS window_from, span.2 AS device_oldest
    FROM ${DEVICE_EVENTS_TABLE}
    WHERE ${where.join(' AND ')} AND occurred_at >= span.1
    ORDER BY occurred_at DESC, id DESC
    LIMIT {limit:UInt32}
    SETTINGS ${PAGE_SETTINGS.join(', ')}`;
  return { sql, params };
}

/**
 * deviceWindowSql's window edge, from a span read apart (batchedDeviceSpans), computed as
 * the SQL computes it, in microseconds: undefined where the span counts no event.
 */
export function spanWindowFrom(span: DeviceSpan, query: FeedQuery): string | undefined {
  if (span.events === 0) return undefined;
  const oldest = storeTextMicros(span.oldest);
  const newest = storeTextMicros(span.newest);
  const top = Math.min(newest, storeTextMicros(pageTop(query)));
  const width = Math.floor((newest - oldest) / span.events) * query.limit * WINDOW_MARGIN + LEAST_WIDTH_US;
  return microsStoreText(top - Math.min(width, Math.max(top - oldest, 0)));
}

/**
 * The rest of a device's range below the page's position, read when the window fell
 * short: every partition the device's events may lie in. Not at all for a device with no
 * span, which no event has named (the condition is a constant the engine folds before it
 * opens a part).
 */
export function deviceRestSql(query: FeedQuery): { sql: string; params: SqlParams } {
  const { where, params } = pageConditions(query);
  params['limit'] = query.limit;
  const sql = `SELECT ${EVENT_COLUMNS.join(', ')}
    FROM ${DEVICE_EVENTS_TABLE}
    WHERE ${where.join(' AND ')} AND (SELECT count() ${SPAN_OF_DEVICE}) > 0
    ORDER BY occurred_at DESC, id DESC
    LIMIT {limit:UInt32}
    SETTINGS ${PAGE_SETTINGS.join(', ')}`;
  return { sql, params };
}

/**
 * What a device page is read with besides its SQL: the store's plain reads, which go in
 * batches while the store is busy (src/store/batched-page-reads.ts), the widths recent
 * pages of each device needed, and the clock a first page starts below.
 */
export interface DevicePageReads {
  readonly transport: SqlTransport;
  readonly readPage: PageRead;
  /** Runs a read that takes a query of its own where the store has room for one, else gives undefined (BatchedPageRead.whenAlone). */
  readonly whenAlone: <T>(task: () => Promise<T>) => Promise<T> | undefined;
  /** Device spans read together, for the pages that wait (src/store/device-span-reads.ts). */
  readonly spans: DeviceSpanRead;
  readonly hints: WindowHints;
  readonly nowMs: number;
}

const DAY_MS = 86_400_000;

/**
 * The bounds of a remembered device width (only `firstMs` and `widestMs` count): the
 * window's least width, and decades above, since a device page has no reach and a sparse
 * device's page may span years. The plan itself, returned by the hints, means none is known.
 */
export const DEVICE_WIDTHS: WindowPlan = { firstMs: LEAST_WIDTH_US / 1000, growth: 1, widestMs: 20 * 366 * DAY_MS, probes: 1 };

/**
 * Up to `query.limit` distinct events of a device's page (docs/decisions/device-pages.md,
 * docs/decisions/device-pages-remembered-width.md). A device a recent full page showed:
 * one plain read, below the page's top, of the width that page needed, which a batch may
 * carry. Otherwise, or when that window falls short, the window its span sizes, below
 * the remembered one: in one query where the store has room for it, else the span read
 * with other devices' and the window with other pages'. Never short while the device has
 * more: only the device's oldest event ends it.
 */
export async function readDevicePage(reads: DevicePageReads, query: FeedQuery): Promise<EventRow[]> {
  const topMs = windowsStart(query, reads.nowMs);
  const plan = reads.hints.plan(query, DEVICE_WIDTHS);
  const learn = (page: EventRow[]): EventRow[] => {
    const last = page.at(-1);
    if (page.length >= query.limit && last !== undefined) reads.hints.learn(query, topMs - storeTextMs(last.occurred_at), DEVICE_WIDTHS);
    return page;
  };
  const bySpan = (q: FeedQuery, previous?: FeedRowKey) => reads.whenAlone(() => readFromSpan(reads.transport, q, previous)) ?? readFromSpanWithOthers(reads, q, previous);
  if (plan === DEVICE_WIDTHS) return learn(await bySpan(query));
  const window = { from: msStoreText(topMs - plan.firstMs) };
  const rows = await readDistinct((after, limit) => reads.readPage({ ...query, after, limit }, window), query.after, query.limit);
  const since = query.filters.since;
  if (rows.length >= query.limit || (since !== undefined && window.from <= since)) return learn(rows);
  // Every event in the window was read: the span's read goes on strictly below it.
  const below = { ...query, after: { occurredAt: window.from, id: NIL_UUID }, limit: query.limit - rows.length };
  return learn([...rows, ...(await bySpan(below, rows.at(-1)))]);
}

/**
 * readFromSpan's page for a store with no room for a query of its own: the span read with
 * other devices' (one query for them all), then the window it sizes read as a page's
 * window, which a batch may carry; the rest when the window falls short, as readFromSpan.
 */
async function readFromSpanWithOthers(reads: DevicePageReads, query: FeedQuery, previous?: FeedRowKey): Promise<EventRow[]> {
  const { deviceId } = query.filters;
  if (deviceId === undefined) throw new Error('a device page names its device');
  const span = await reads.spans({ orgId: query.orgId, projectId: query.projectId, deviceId });
  // No event has named the device.
  if (span === undefined) return [];
  const from = spanWindowFrom(span, query);
  if (from === undefined) return readRest(reads.transport, query, [], previous);
  const rows = await readDistinct((after, limit) => reads.readPage({ ...query, after, limit }, { from }), query.after, query.limit, previous);
  if (rows.length >= query.limit || from <= span.oldest) return rows;
  return readRest(reads.transport, query, rows, previous);
}

/**
 * The page below `query`'s position as the device's span sizes it: one read of the window
 * the span gives, which holds the page for a device writing at a steady rate; when it
 * falls short and the device's events reach below it, one read of the rest. `previous` is
 * the page's last row above, when part of the page was read before.
 */
async function readFromSpan(transport: SqlTransport, query: FeedQuery, previous?: FeedRowKey): Promise<EventRow[]> {
  let window: { readonly from: string; readonly oldest: string } | undefined;
  const rows = await readDistinct<WindowRow>(
    async (after, limit) => {
      const { sql, params } = deviceWindowSql({ ...query, after, limit });
      const found = await transport.query<WindowRow>(sql, params);
      // The last read's window is the one that ended the page: a read after folded copies
      // sizes a window of its own, and one that found nothing says nothing of where it began.
      const first = found[0];
      window = first === undefined ? undefined : { from: first.window_from, oldest: first.device_oldest };
      return found;
    },
    query.after,
    query.limit,
    previous,
  );
  // Store text compares as the times it holds.
  if (rows.length >= query.limit || (window !== undefined && window.from <= window.oldest)) return rows;
  return readRest(transport, query, rows, previous);
}

/** `rows`, the page read so far below `query`'s position, and the rest of the device's range below them up to the page's limit (deviceRestSql). */
async function readRest(transport: SqlTransport, query: FeedQuery, rows: EventRow[], previous?: FeedRowKey): Promise<EventRow[]> {
  const last = rows.at(-1);
  const rest = await readDistinct<EventRow>(
    (after, limit) => {
      const { sql, params } = deviceRestSql({ ...query, after, limit });
      return transport.query<EventRow>(sql, params);
    },
    last === undefined ? query.after : { occurredAt: last.occurred_at, id: last.id },
    query.limit - rows.length,
    last ?? previous,
  );
  return [...rows, ...rest];
}
