import type { FeedPosition, FeedSlice } from '../../store/event-store.js';
import { compareFeedOrder } from './first-page-merge.js';

/**
 * The page a cursor asks, cut from a kept first page's slice instead of read from the
 * store, where the slice is sure to hold it: `want` events strictly after `after` in the
 * feed's order (one past the page included), or undefined where the slice cannot tell.
 *
 * A kept slice is the exact head of its query: the newest `readLimit` events (more once
 * brought up to date when written), or fewer where its read held the whole range, or the
 * range above `resumeAfter` where its read stopped at its bound on work. So the events
 * after a cursor that the slice holds are the query's next events, and the page is cut
 * where:
 * - the slice holds `want` of them (a full page and the one past it, which tells
 *   `has_more`);
 * - or it held the whole range (fewer than `readLimit`, no `resumeAfter`): the page is the
 *   rest of it.
 * Anything else is the store's to read: a cursor below the slice's last event, a page that
 * runs past it, or a short page above where the slice's read stopped, which a read from
 * the cursor, walking windows of its own, may fill.
 */
export function pageAfterKept(kept: FeedSlice, after: FeedPosition, want: number, readLimit: number): FeedSlice | undefined {
  const start = kept.events.findIndex((stored) => compareFeedOrder(stored.position, after) < 0);
  const onward = start < 0 ? [] : kept.events.slice(start, start + want);
  if (onward.length >= want) return { events: onward };
  return kept.events.length >= readLimit || kept.resumeAfter !== undefined ? undefined : { events: onward };
}
