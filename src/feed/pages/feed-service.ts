import type { CanonicalEvent, CursorPaginationMeta } from '../../generated/schema-types.js';
import type { EventStore, FeedFilters, FeedPosition, FeedQuery, FeedSlice, StoredEvent } from '../../store/event-store.js';
import type { CursorCodec, CursorScope } from './cursor.js';
import type { FirstPageCache } from '../first-page-cache/first-page-cache.js';
import { mergeWritten } from '../first-page-cache/first-page-merge.js';
import { pageAfterKept } from '../first-page-cache/page-after-kept.js';
import { clampPageSize } from './page-size.js';
import { createSharedReads } from '../shared-reads.js';
import type { StoredBatches } from '../stored-batches.js';

export interface FeedRequest {
  readonly orgId: string;
  readonly projectId: string;
  readonly filters: FeedFilters;
  readonly cursor: string | undefined;
  readonly limit: number | undefined;
}

export interface FeedPage {
  readonly items: CanonicalEvent[];
  readonly meta: CursorPaginationMeta;
}

export interface FeedService {
  listEvents(request: FeedRequest): Promise<FeedPage>;
}

/**
 * The whole query, so that a filter added later can never be left out of the key and two
 * different pages share a read. A field built in another order only makes two equal
 * queries miss each other.
 */
const queryKey = (query: FeedQuery): string => JSON.stringify(query);

/**
 * Pages a kept first page is read with: the first, and the next one a reader's cursor asks
 * for, cut from it in memory (src/feed/first-page-cache/page-after-kept.ts); one more is kept of what is
 * written above it, so that a cursor given out before a page's worth of new events still
 * finds its page there. Reading 101 rows for a page of 50 costs the store about what 51
 * do where the same windows hold them: a page's cost is the query, not its rows
 * (docs/decisions/feed-page-after-kept.md); a sparse page may walk a window or two more.
 */
export const KEPT_PAGES_READ = 2;
export const KEPT_PAGES_HELD = KEPT_PAGES_READ + 1;

export interface FeedServiceDeps {
  readonly store: EventStore;
  readonly cursors: CursorCodec;
  readonly firstPages?: FirstPageCache<FeedSlice, StoredEvent> | undefined;
  /** Told where each page by cursor came from, where first pages are kept: cut from a kept first page (memory) or read (store). */
  readonly cursorPageServed?: (source: 'memory' | 'store') => void;
  /** This process's own inserts, where it ingests: a request after one never joins a read begun before it. */
  readonly ownWrites?: Pick<StoredBatches, 'onStored'>;
}

/**
 * Pages of the feed. Identical page requests that overlap (dashboards polling a
 * project's first page, say) share one store query: a page's cost is mostly the engine's
 * fixed work per query, not the rows it reads (docs/decisions/feed-shared-reads.md); first
 * pages may be served from `firstPages` for a bounded while, and the page after one from
 * what it kept.
 */
export function createFeedService(deps: FeedServiceDeps): FeedService {
  const reads = createSharedReads<FeedSlice>();
  const { firstPages } = deps;
  // Counts this process's inserts. A read shared by its key alone served a request that
  // came after an insert had returned the page of a read begun before it (a slow page
  // under load, seconds old), without the event this process had just stored: reads are
  // shared within one count only. One count for every project, so an insert costs an
  // increment and not a key per event.
  let ownWrites = 0;
  deps.ownWrites?.onStored(() => {
    ownWrites += 1;
  });
  const sharedKey = (query: FeedQuery) => `${ownWrites}|${queryKey(query)}`;
  const read = (query: FeedQuery) => reads.read(sharedKey(query), () => deps.store.listEvents(query));

  // A first page, and what is kept of it. The cache sits inside the shared read, so the
  // read it keeps or refuses is the one that asked the store, not one a request joined late.
  const keptFirstPage = (cache: FirstPageCache<FeedSlice, StoredEvent>, kept: FeedQuery, limit: number) => {
    const key = queryKey(kept);
    const merge = (page: FeedSlice, written: readonly StoredEvent[]) => mergeWritten(kept, page, written, limit * KEPT_PAGES_HELD + 1);
    return reads.read(sharedKey(kept), () => cache.read(kept, key, () => deps.store.listEvents(kept), merge));
  };

  const slice = async (scope: CursorScope, after: FeedPosition | undefined, limit: number): Promise<FeedSlice> => {
    // One row past the page tells whether another page exists, without a count query.
    const query: FeedQuery = { ...scope, after, limit: limit + 1 };
    if (firstPages === undefined) return read(query);
    const kept: FeedQuery = { ...scope, after: undefined, limit: limit * KEPT_PAGES_READ + 1 };
    if (after === undefined) return keptFirstPage(firstPages, kept, limit);
    const onward = firstPages.cut(queryKey(kept), (held) => pageAfterKept(held, after, query.limit, kept.limit));
    deps.cursorPageServed?.(onward === undefined ? 'store' : 'memory');
    return onward ?? read(query);
  };

  return {
    async listEvents(request) {
      const scope = { orgId: request.orgId, projectId: request.projectId, filters: request.filters };
      const after = request.cursor === undefined ? undefined : deps.cursors.decode(request.cursor, scope);
      const limit = clampPageSize(request.limit);
      const found = await slice(scope, after, limit);
      const page = found.events.slice(0, limit);
      // Past the page: its last event. A read that stopped at its bound on work (a short
      // page, docs/decisions/feed-time-windows.md) goes on below everything it looked at.
      const next = found.events.length > limit ? page.at(-1)?.position : found.resumeAfter;
      return {
        items: page.map((r) => r.event),
        meta: {
          items_per_page: limit,
          count: page.length,
          has_more: next !== undefined,
          next_cursor: next === undefined ? null : deps.cursors.encode(next, scope),
        },
      };
    },
  };
}
