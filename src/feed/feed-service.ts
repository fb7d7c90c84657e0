import type { CanonicalEvent, CursorPaginationMeta } from '../generated/schema-types.js';
import type { EventStore, FeedFilters, FeedQuery, FeedSlice, StoredEvent } from '../store/event-store.js';
import type { CursorCodec } from './cursor.js';
import type { FirstPageCache } from './first-page-cache.js';
import { mergeWritten } from './first-page-merge.js';
import { clampPageSize } from './page-size.js';
import { createSharedReads } from './shared-reads.js';

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
 * Pages of the feed. Identical page requests that overlap (dashboards polling a
 * project's first page, say) share one store query: a page's cost is mostly the engine's
 * fixed work per query, not the rows it reads (docs/decisions/feed-storage.md); first
 * pages may be served from `firstPages` for a bounded while.
 */
export function createFeedService(deps: { store: EventStore; cursors: CursorCodec; firstPages?: FirstPageCache<FeedSlice, StoredEvent> }): FeedService {
  const reads = createSharedReads<FeedSlice>();
  return {
    async listEvents(request) {
      const scope = { orgId: request.orgId, projectId: request.projectId, filters: request.filters };
      const after = request.cursor === undefined ? undefined : deps.cursors.decode(request.cursor, scope);
      const limit = clampPageSize(request.limit);
      // One row past the page tells whether another page exists, without a count query.
      const query: FeedQuery = { ...scope, after, limit: limit + 1 };
      const key = queryKey(query);
      const fromStore = () => deps.store.listEvents(query);
      // First pages, what dashboards poll, may come from the short-lived cache
      // (src/feed/first-page-cache.ts). The cache sits inside the shared read, so the read
      // it keeps or refuses is the one that asked the store, not one a request joined late.
      const firstPages = after === undefined ? deps.firstPages : undefined;
      const merge = (page: FeedSlice, written: readonly StoredEvent[]) => mergeWritten(query, page, written);
      const slice = await reads.read(key, firstPages === undefined ? fromStore : () => firstPages.read(scope, key, fromStore, merge));
      const page = slice.events.slice(0, limit);
      // Past the page: its last event. A read that stopped at its bound on work (a short
      // page, docs/decisions/feed-storage.md) goes on below everything it looked at.
      const next = slice.events.length > limit ? page.at(-1)?.position : slice.resumeAfter;
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
