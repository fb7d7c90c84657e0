import type { FeedPosition } from './event-store.js';

/** What the feed's rows are keyed by within one project: the rest of the sort key, (occurred_at, id). */
export type FeedRowKey = { readonly id: string; readonly occurred_at: string };

const sameEvent = (a: FeedRowKey, b: FeedRowKey | undefined) => b !== undefined && a.id === b.id && a.occurred_at === b.occurred_at;

/**
 * Drops every row that is a copy of the previous row: the same id at the same occurred_at.
 * The feed reads rows in sort-key order (occurred_at DESC, id DESC), and the copies of a
 * redelivered event share that key, so they are always adjacent: one look back is enough,
 * with no set of seen ids. One id at two instants is two events, as the store keeps it.
 * `previous` is the row just before `rows`, when a page is read in pieces.
 */
export function foldAdjacentCopies<Row extends FeedRowKey>(rows: readonly Row[], previous?: FeedRowKey): Row[] {
  const kept: Row[] = [];
  let last = previous;
  for (const row of rows) {
    if (!sameEvent(row, last)) kept.push(row);
    last = row;
  }
  return kept;
}

/** One read of raw rows (copies included), strictly after `after`, at most `limit` of them. */
export type RawFeedRead<Row> = (after: FeedPosition | undefined, limit: number) => Promise<Row[]>;

/**
 * Up to `limit` distinct events, reading raw rows in order. A read that came back full but
 * lost rows to folding is followed by another one starting after its last raw row, so a
 * page is only short when the range is exhausted, and the next read's keyset stays exact
 * (the copies of that last row sit at the same position, which the strict keyset skips).
 * `previous` is the last row of the page before this read began, when it is read window
 * by window.
 */
export async function readDistinct<Row extends FeedRowKey>(
  read: RawFeedRead<Row>,
  after: FeedPosition | undefined,
  limit: number,
  previous?: FeedRowKey,
): Promise<Row[]> {
  const page: Row[] = [];
  let position = after;
  while (page.length < limit) {
    const want = limit - page.length;
    const raw = await read(position, want);
    page.push(...foldAdjacentCopies(raw, page.at(-1) ?? previous));
    const tail = raw.at(-1);
    if (raw.length < want || tail === undefined) break;
    position = { occurredAt: tail.occurred_at, id: tail.id };
  }
  return page;
}
