import type { EventStore, FeedQuery, FeedSlice } from '../../src/store/event-store.js';

export type Scope = Pick<FeedQuery, 'orgId' | 'projectId' | 'filters'>;

/**
 * Walks the feed as the feed service pages it (one event past the page tells has_more),
 * with the page sizes given in turn: every field of every event, page by page. `short`
 * counts pages that stopped at their bound on work before the range ended. A walk longer
 * than `maxPages` fails.
 */
export async function walk(store: Pick<EventStore, 'listEvents'>, scope: Scope, limits: readonly number[], short = { pages: 0 }, maxPages = 2000): Promise<string[][]> {
  const pages: string[][] = [];
  let after: FeedQuery['after'];
  for (let n = 0; n < maxPages; n += 1) {
    const limit = limits[n % limits.length]!;
    const slice: FeedSlice = await store.listEvents({ ...scope, after, limit: limit + 1 });
    const page = slice.events.slice(0, limit);
    pages.push(page.map((e) => JSON.stringify(e.event)));
    after = slice.events.length > limit ? page.at(-1)!.position : slice.resumeAfter;
    if (slice.events.length <= limit && slice.resumeAfter !== undefined) short.pages += 1;
    if (after === undefined) return pages;
  }
  throw new Error(`the walk did not end in ${maxPages} pages`);
}
