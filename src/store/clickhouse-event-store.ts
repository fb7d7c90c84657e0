import { fromEventRow, type EventRow } from './event-rows.js';
import { eventRowText } from './event-row-text.js';
import type { EventStore, FeedQuery, FeedSlice } from './event-store.js';
import { feedSql, olderEventSql } from './feed-sql.js';
import { msStoreText, storeTextMs, WINDOW_PLAN, windowsStart, windowWalk, type FeedWindow, type WindowPlan } from './feed-windows.js';
import { readFirst, type FirstRead } from './first-read.js';
import { createWindowHints, type WindowHints } from './window-hints.js';
import { scopeSpan, spanAnswers, spanHolds, spanHoldsBelow, spanRows, spanStep, type ScopeSpan } from './event-spans.js';
import { createClickHouseTail } from './clickhouse-tail.js';
import { createClickHouseProjectChanges } from './clickhouse-project-changes.js';
import { splitByPartitions } from './event-batches.js';
import { readDistinct } from './fold-copies.js';
import type { SqlTransport } from './sql-transport.js';
import { batchedPageReads, PAGE_BATCHING, type PageBatching, type PageRead } from './batched-page-reads.js';
import { NIL_UUID } from '../ids/uuid.js';
import { DEVICE_EVENTS_TABLE, DEVICE_SPANS_TABLE, readsByDevice } from './device-events.js';
import { readDevicePage } from './device-pages.js';
import { batchedDeviceSpans } from './device-span-reads.js';

/**
 * Inserts into the tables a batch is written to that carry no row: they take the inserts'
 * own path (the client, the engine, the tables being there and writable) and leave
 * nothing behind, so they can be sent whenever the consumer needs to ask. A row of its own
 * would show in a feed. Every table a batch writes, the device table through its view
 * included: a batch that failed on one of them is the store's fault, not its events',
 * when that table cannot take a write.
 */
const PROBE_WRITES = [
  'INSERT INTO event_spans SELECT * FROM event_spans WHERE 0',
  `INSERT INTO ${DEVICE_EVENTS_TABLE} SELECT * FROM ${DEVICE_EVENTS_TABLE} WHERE 0`,
  `INSERT INTO ${DEVICE_SPANS_TABLE} SELECT * FROM ${DEVICE_SPANS_TABLE} WHERE 0`,
  'INSERT INTO events SELECT * FROM events WHERE 0',
];

/**
 * The occurred_at of the newest event of the page's query (filters, cursor) in `window`,
 * or undefined when it holds none: the page's own SQL, reading the sort key only, LIMIT 1.
 */
async function newestEventIn(transport: SqlTransport, query: FeedQuery, window: FeedWindow): Promise<string | undefined> {
  const { sql, params } = feedSql({ ...query, limit: 1 }, window, ['occurred_at']);
  const [row] = await transport.query<{ occurred_at: string }>(sql, params);
  return row?.occurred_at;
}

const toFeedEvent = (row: EventRow) => ({ event: fromEventRow(row), position: { occurredAt: row.occurred_at, id: row.id } });

export interface FeedReadOptions {
  /** The clock the first window starts below when a page has no cursor or `until`. */
  readonly now?: () => number;
  readonly windows?: WindowPlan;
  /** How wide recent full pages of each scope were (src/store/window-hints.ts); one per store by default. */
  readonly hints?: WindowHints;
  /** How concurrent page reads are sent together (src/store/batched-page-reads.ts); `undefined` leaves PAGE_BATCHING, `false` sends each alone. */
  readonly batching?: PageBatching | false;
  /**
   * `false`: every page reads as pages do while the store is busy, never with a query of
   * its own: the walk's first window, not a first read (src/store/first-read.ts); a device
   * page's span read with other devices' (src/store/device-span-reads.ts), not as its window's scalar.
   */
  readonly firstReads?: false;
}

/** One page read sent alone: read in reverse sort-key order, it stops at the page's limit. */
function readAlone(transport: SqlTransport): PageRead {
  return (query, window) => {
    const { sql, params } = feedSql(query, window);
    return transport.query<EventRow>(sql, params);
  };
}

export function createClickHouseEventStore(transport: SqlTransport, options: FeedReadOptions = {}): EventStore {
  const now = options.now ?? Date.now;
  const plan = options.windows ?? WINDOW_PLAN;
  const hints = options.hints ?? createWindowHints();
  const newestBelow = (query: FeedQuery, window: FeedWindow) => newestEventIn(transport, query, window);
  const alone = readAlone(transport);
  const batched = options.batching === false ? undefined : batchedPageReads(transport, alone, options.batching ?? PAGE_BATCHING);
  const readPage: PageRead = batched ?? alone;
  const spans = batchedDeviceSpans(transport);
  /** Runs a read alone where the store has room for one: always, without batching. */
  const whenAlone = <T>(task: () => Promise<T>): Promise<T> | undefined => {
    if (options.firstReads === false) return undefined;
    return batched === undefined ? task() : batched.whenAlone(task);
  };
  /**
   * A page's first read in one query with its span (src/store/first-read.ts). A full read
   * that folding shortened is followed by reads in its window after its last raw row.
   */
  const firstRead = async (query: FeedQuery, nowMs: number, pagePlan: WindowPlan, reach: string | undefined): Promise<FirstRead> => {
    let read: FirstRead | undefined;
    const bounds = { top: msStoreText(windowsStart(query, nowMs)), widthUs: pagePlan.firstMs * 1000, reach };
    const rows = await readDistinct<EventRow>(
      async (after, limit) => {
        if (read === undefined) {
          read = await readFirst(transport, { ...query, after, limit }, bounds);
          return read.rows;
        }
        return read.from === undefined ? [] : alone({ ...query, after, limit }, { from: read.from });
      },
      query.after,
      query.limit,
    );
    return { ...read!, rows };
  };
  return {
    async insertEvents(events) {
      // Spans first, visible before any of the events: a page that reads an event never
      // reads a span narrower than it (docs/decisions/feed-event-spans.md).
      const write = { writeRows: events.length };
      await transport.insert('event_spans', spanRows(events), write);
      for (const part of splitByPartitions(events)) await transport.insert('events', part.map(eventRowText), write);
    },
    async probeWrite() {
      for (const probe of PROBE_WRITES) await transport.command(probe);
    },
    async listEvents(query: FeedQuery): Promise<FeedSlice> {
      const nowMs = now();
      // A device's own table, not the walk below (docs/decisions/device-pages.md).
      if (readsByDevice(query.filters)) return { events: (await readDevicePage({ transport, readPage, whenAlone, spans, hints, nowMs }, query)).map(toFeedEvent) };
      const pagePlan = hints.plan(query, plan);
      let walk = windowWalk(query, nowMs, pagePlan);
      const rows: EventRow[] = [];
      let lowest: string | undefined;
      let skipped = false;
      /** The scope's span once a read asked for it (docs/decisions/feed-event-spans.md). */
      let span: ScopeSpan | undefined;
      /** Whether the span has been read, or has nothing to say (a `device_id` or `fleet_id` filter). */
      let spanRead = !spanAnswers(query.filters);
      /** Whether the windows below are still to be read. */
      let walking = true;
      // A scope the hints know starts with the window its last page needed, one plain read,
      // cheaper than the first read's; the first read is for a scope they do not know.
      const first = pagePlan === plan ? whenAlone(() => firstRead(query, nowMs, pagePlan, walk.reach)) : undefined;
      if (first !== undefined) {
        // The first read read the first window with the span (docs/decisions/feed-first-read.md).
        const read = await first;
        rows.push(...read.rows);
        spanRead = true;
        span = read.span !== undefined && spanHolds(read.span, read.rows) ? read.span : undefined;
        // A window placed at the newest event of a scope idle since well above it jumped the
        // time between, as a skip does: the page says nothing of the scope's rate.
        skipped = span !== undefined && storeTextMs(span.newest) < windowsStart(query, nowMs) - pagePlan.firstMs;
        const since = query.filters.since;
        walking = false;
        if (rows.length >= query.limit) lowest = read.from;
        else if (read.from === undefined) lowest = read.span === undefined ? undefined : walk.reach;
        else if ((span !== undefined && read.from <= span.oldest) || (since !== undefined && read.from <= since)) lowest = undefined;
        else if (walk.reach !== undefined && read.from <= walk.reach) lowest = walk.reach;
        else {
          lowest = read.from;
          walking = true;
          walk = windowWalk(query, nowMs, pagePlan, { edge: read.from, topMs: span === undefined ? nowMs : storeTextMs(span.newest) });
          if (rows.length > 0) walk.paceFor(rows.length, query.limit - rows.length);
        }
      }
      for (let window = walking ? walk.next() : undefined; window !== undefined; window = walk.next()) {
        const read = (after: FeedQuery['after'], limit: number) => readPage({ ...query, after, limit }, window);
        const found = await readDistinct(read, query.after, query.limit - rows.length, rows.at(-1));
        rows.push(...found);
        lowest = window.from;
        if (rows.length >= query.limit || lowest === undefined) break;
        // A row outside the span proves it stale (a writer other than the store): walk on without it.
        if (span !== undefined && !spanHolds(span, found)) span = undefined;
        if (span !== undefined && span.oldest >= lowest) {
          // Every event of the scope at or above its oldest has been read: the range ends here.
          lowest = undefined;
          break;
        }
        if (found.length > 0) {
          // The page's total so far, not this window's: the rate is over all the windows read.
          walk.paceFor(rows.length, query.limit - rows.length);
          continue;
        }
        if (!spanRead) {
          spanRead = true;
          span = await scopeSpan(transport, query);
          if (span !== undefined && !spanHolds(span, rows)) span = undefined;
          const step = spanStep(span, rows.length, lowest, walk.reach, query.filters.since);
          if (step.kind === 'end') lowest = undefined;
          if (step.kind === 'reach') lowest = walk.reach;
          if (step.kind === 'end' || step.kind === 'reach') break;
          if (step.kind === 'skip') {
            skipped = true;
            walk.skipTo(step.newestMs);
          }
          continue;
        }
        if (!walk.canSkip) continue;
        // An empty window: one ordered LIMIT 1 finds the newest matching event below it
        // within the page's reach, so a page skips empty time (a new or idle project, a
        // filter that matches nothing) in one query instead of a window per stretch.
        const newest = await newestBelow(query, { ...(walk.reach === undefined ? {} : { from: walk.reach }), to: lowest });
        if (newest === undefined) {
          lowest = walk.reach;
          break;
        }
        skipped = true;
        walk.skipTo(storeTextMs(newest));
      }
      const events = rows.map(toFeedEvent);
      const last = rows.at(-1);
      // A page that skipped a gap says nothing about the scope's rate.
      if (rows.length >= query.limit && last !== undefined && !skipped) hints.learn(query, windowsStart(query, nowMs) - storeTextMs(last.occurred_at), plan);
      if (rows.length >= query.limit || lowest === undefined) return { events };
      // The page stopped above the range's end: go on below only if the scope has anything there.
      const resume = { events, resumeAfter: { occurredAt: lowest, id: NIL_UUID } };
      const below = span === undefined ? undefined : spanHoldsBelow(span, lowest, query.filters.since);
      if (below !== undefined) return below ? resume : { events };
      const { sql, params } = olderEventSql(query, lowest);
      const older = await transport.query<{ found: number }>(sql, params);
      return older.length === 0 ? { events } : resume;
    },
    ...createClickHouseTail(transport),
    ...createClickHouseProjectChanges(transport),
  };
}
