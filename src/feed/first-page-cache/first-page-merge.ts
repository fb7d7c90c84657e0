import type { FeedFilters, FeedPosition, FeedQuery, FeedSlice, StoredEvent } from '../../store/event-store.js';
import { matchesFilters } from '../tail/tail-matching.js';

/**
 * ClickHouse orders UUIDs as 128-bit numbers whose second half weighs more than the first
 * (measured: `ORDER BY` a UUID column sorts by its last 16 hex digits, then its first 16).
 * This text sorts as the store does, so a merged page keeps the store's order exactly.
 */
function uuidOrderKey(id: string): string {
  const hex = id.replace(/-/g, '').toLowerCase();
  return hex.slice(16) + hex.slice(0, 16);
}

/** Above 0 when `a` comes first in the feed's order (occurred_at DESC, id DESC). Both occurred_at are the store's fixed-width text. */
export function compareFeedOrder(a: FeedPosition, b: FeedPosition): number {
  if (a.occurredAt !== b.occurredAt) return a.occurredAt > b.occurredAt ? 1 : -1;
  const ka = uuidOrderKey(a.id);
  const kb = uuidOrderKey(b.id);
  return ka === kb ? 0 : ka > kb ? 1 : -1;
}

/**
 * The feed's filters as the store applies them (src/store/filter-sql.ts), on one stored
 * event: the live tail's, whose ids the route has put in lower case as the store keeps
 * them, and the bounds on the stored instant.
 */
function matchesFeedFilters(f: FeedFilters, stored: StoredEvent): boolean {
  const at = stored.position.occurredAt;
  // Bounds and positions are the store's DateTime64(6) text: text order is time order.
  return matchesFilters(f, stored.event) && (f.since === undefined || at >= f.since) && (f.until === undefined || at < f.until);
}

/** One event, one key: copies of a redelivered event share their position, as the store's fold has it (src/store/fold-copies.ts). */
const positionKey = (p: FeedPosition) => `${p.occurredAt}/${p.id.toLowerCase()}`;

/**
 * The first page `query` would read now, from the page it read before and the events
 * written to its project since (a window of the store's ingestion, copies included),
 * where `page` holds what its read saw and `written` everything ingested after it:
 * - a full page takes what lies above its last event, and stays full;
 * - a page shorter than the query's limit held the whole range, and takes every event
 *   that matches;
 * - a page that stopped at its bound on work (`resumeAfter`) held the range above that
 *   position only: it takes what lies above it, and goes on from there as before, unless
 *   it is full now. A new event below it is on the pages a cursor walk reads from there.
 * One way it can differ from a read: a page that ended where its windows stopped
 * reaching, with nothing found below (src/store/clickhouse-event-store.ts), takes an event
 * backfilled below that reach too, where a read would stop short above it and leave it to
 * the cursor: the event shows sooner, and no event is left out.
 * A page takes at most `keepAtMost` events (the query's limit unless told): the newest,
 * so a full page stays the exact head of its range whatever it keeps.
 * Returns `page` itself when nothing written belongs on it; undefined for a page by cursor.
 */
export function mergeWritten(query: FeedQuery, page: FeedSlice, written: readonly StoredEvent[], keepAtMost = query.limit): FeedSlice | undefined {
  if (query.after !== undefined) return undefined;
  const org = query.orgId.toLowerCase();
  const project = query.projectId.toLowerCase();
  const floor = page.events.length >= query.limit ? page.events.at(-1)?.position : page.resumeAfter;
  const candidates = written.filter(
    (stored) =>
      stored.event.org_id.toLowerCase() === org &&
      stored.event.project_id.toLowerCase() === project &&
      matchesFeedFilters(query.filters, stored) &&
      (floor === undefined || compareFeedOrder(stored.position, floor) > 0),
  );
  if (candidates.length === 0) return page;
  // The page is newest first and new events are mostly the newest: only its events at or
  // above the oldest candidate's instant can be one of them, so only those are keyed.
  const oldest = candidates.reduce((low, c) => (c.position.occurredAt < low ? c.position.occurredAt : low), candidates[0]!.position.occurredAt);
  const held = new Set<string>();
  for (const e of page.events) {
    if (e.position.occurredAt < oldest) break;
    held.add(positionKey(e.position));
  }
  const fresh: StoredEvent[] = [];
  for (const stored of candidates) {
    const key = positionKey(stored.position);
    if (held.has(key)) continue;
    held.add(key);
    fresh.push(stored);
  }
  if (fresh.length === 0) return page;
  const events = [...page.events, ...fresh].sort((a, b) => compareFeedOrder(b.position, a.position)).slice(0, Math.max(query.limit, keepAtMost));
  return events.length < query.limit && page.resumeAfter !== undefined ? { events, resumeAfter: page.resumeAfter } : { events };
}
