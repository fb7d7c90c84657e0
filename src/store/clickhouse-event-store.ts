import { fromEventRow, type EventRow } from './event-rows.js';
import { eventRowText } from './event-row-text.js';
import type { EventStore, FeedQuery, FeedSlice } from './event-store.js';
import { feedSql, olderEventSql } from './feed-sql.js';
import { msStoreText, storeTextMs, WINDOW_PLAN, windowsStart, windowWalk, type FeedWindow, type WindowPlan } from './feed-windows.js';
import { readFirst, type FirstRead } from './first-read.js';
import { createWindowHints, type WindowHints } from './window-hints.js';
import { spanHolds, spanHoldsBelow, spanRows } from './event-spans.js';
import { createClickHouseTail } from './clickhouse-tail.js';
import { createClickHouseProjectChanges } from './clickhouse-project-changes.js';
import { splitByPartitions } from './event-batches.js';
import { readDistinct } from './fold-copies.js';
import type { SqlTransport } from './sql-transport.js';
import { batchedPageReads, PAGE_BATCHING, type PageBatching, type PageRead } from './batched-page-reads.js';
import { NIL_UUID } from '../ids/uuid.js';
import { DEVICE_EVENTS_TABLE, DEVICE_SPANS_TABLE, readsByDevice } from './device-events.js';
import { readDevicePage } from './device-pages.js';

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

/** The first read's window, when the scope's last full pages are known: this many times what one spanned (src/store/window-hints.ts). */
const HINTED_WIDTH = 4;
/**
 * The far window of the first read (src/store/first-read.ts), read only when the near one
 * held less than a page, reaches at most this many of the plan's widest windows below the
 * scope's newest event: about a year, as the plan's reach is, within which a sparse page
 * (a quiet fleet, a rare action) is then one query instead of a walk.
 */
const FAR_WIDTHS = 12;
/** The widest first window, two centuries: in microseconds, within the integers a JavaScript number binds exactly (2^53). */
const WIDEST_FIRST_MS = 200 * 366 * 86_400_000;

const toFeedEvent = (row: EventRow) => ({ event: fromEventRow(row), position: { occurredAt: row.occurred_at, id: row.id } });

export interface FeedReadOptions {
  /** The clock the first window starts below when a page has no cursor or `until`. */
  readonly now?: () => number;
  readonly windows?: WindowPlan;
  /** How wide recent full pages of each scope were (src/store/window-hints.ts); one per store by default. */
  readonly hints?: WindowHints;
  /** How concurrent page reads are sent together (src/store/batched-page-reads.ts); `undefined` leaves PAGE_BATCHING, `false` sends each alone. */
  readonly batching?: PageBatching | false;
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
  const readPage = options.batching === false ? alone : batchedPageReads(transport, alone, options.batching ?? PAGE_BATCHING);
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
      // A device's own table and span, not the walk below (docs/decisions/device-pages.md).
      if (readsByDevice(query.filters)) return { events: (await readDevicePage(transport, query)).map(toFeedEvent) };
      // Every other page: one read with its scope's span and a window sized from it, then,
      // only when that window held less than the page, the walk below it
      // (docs/decisions/feed-first-read.md).
      const nowMs = now();
      const hinted = hints.plan(query, plan);
      const startMs = windowsStart(query, nowMs);
      const reach = windowWalk(query, nowMs, hinted).reach;
      // The first read's window: a few times what the scope's last full page spanned, when
      // known; else the plan's widest window. Its sort-key read stops at the page's last
      // row, so a wide window costs the parts it opens, not the rows between.
      const wideMs = hinted === plan ? plan.widestMs : Math.min(plan.widestMs, HINTED_WIDTH * hinted.firstMs);
      let first: FirstRead | undefined;
      const rows: EventRow[] = await readDistinct(
        async (after, limit) => {
          if (first === undefined) {
            first = await readFirst(transport, { ...query, after, limit }, {
              top: msStoreText(startMs),
              wideUs: Math.min(wideMs, WIDEST_FIRST_MS) * 1000,
              farUs: Math.min(FAR_WIDTHS * plan.widestMs, WIDEST_FIRST_MS) * 1000,
              reach,
            });
            return first.rows;
          }
          // Copies folded left the read short: on within the same window, strictly after its last raw row.
          return first.from === undefined ? [] : readPage({ ...query, after, limit }, { from: first.from });
        },
        query.after,
        query.limit,
      );
      const { span: firstSpan, from } = first!;
      /** The scope's span, while no row read lies outside it (docs/decisions/feed-event-spans.md). */
      let span = firstSpan !== undefined && spanHolds(firstSpan, rows) ? firstSpan : undefined;
      // A page that started at the scope's newest event far below its top skipped a gap: it says nothing of the scope's rate.
      let skipped = firstSpan !== undefined && storeTextMs(firstSpan.newest) < startMs - plan.widestMs;
      /** The lower edge of the range read so far; undefined once the scope's range has ended. */
      let lowest: string | undefined;
      /** Whether the walk goes on below the first read's window. */
      let walkOn = false;
      const since = query.filters.since;
      if (firstSpan === undefined || (since !== undefined && firstSpan.newest < since)) {
        // No event of the scope was ever written, or none at or after since: the range is empty.
        lowest = undefined;
      } else if (from === undefined) {
        // The scope's newest event lies below the plan's reach: the page stops there, as its walk would.
        lowest = reach;
      } else if (firstSpan.oldest >= from || (since !== undefined && from <= since)) {
        // The window reached the scope's oldest event, or since: every event of the range has been read.
        lowest = undefined;
      } else if (reach !== undefined && from <= reach) {
        lowest = reach;
      } else {
        lowest = from;
        walkOn = true;
      }
      if (rows.length < query.limit && walkOn && from !== undefined && firstSpan !== undefined) {
        const walk = windowWalk(query, nowMs, hinted, {
          to: from,
          // The time the first window covered that may hold events: from the scope's newest event (or the top) down.
          readMs: Math.max(0, Math.min(startMs, storeTextMs(firstSpan.newest)) - storeTextMs(from)),
          width: Math.min(plan.widestMs, Math.max(wideMs, hinted.firstMs) * plan.growth),
        });
        if (rows.length > 0) walk.paceFor(rows.length, query.limit - rows.length);
        for (let window = walk.next(); window !== undefined; window = walk.next()) {
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
          if (!walk.canSkip) continue;
          // An empty window: one ordered LIMIT 1 finds the newest matching event below it
          // within the page's reach, so a page skips empty time (a long gap, a device or
          // fleet that went quiet) in one query instead of a window per stretch.
          const newest = await newestBelow(query, { ...(walk.reach === undefined ? {} : { from: walk.reach }), to: lowest });
          if (newest === undefined) {
            lowest = walk.reach;
            break;
          }
          skipped = true;
          walk.skipTo(storeTextMs(newest));
        }
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
