import type { CanonicalEvent, CursorPaginationMeta } from '../generated/schema-types.js';
import type { EventStore, FeedFilters } from '../store/event-store.js';
import type { CursorCodec } from './cursor.js';
import { clampPageSize } from './page-size.js';

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

export function createFeedService(deps: { store: EventStore; cursors: CursorCodec }): FeedService {
  return {
    async listEvents(request) {
      const scope = { orgId: request.orgId, projectId: request.projectId, filters: request.filters };
      const after = request.cursor === undefined ? undefined : deps.cursors.decode(request.cursor, scope);
      const limit = clampPageSize(request.limit);
      // One row past the page tells whether another page exists, without a count query.
      const rows = await deps.store.listEvents({ ...scope, after, limit: limit + 1 });
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      const hasMore = rows.length > limit && last !== undefined;
      return {
        items: page.map((r) => r.event),
        meta: {
          items_per_page: limit,
          count: page.length,
          has_more: hasMore,
          next_cursor: hasMore ? deps.cursors.encode(last.position, scope) : null,
        },
      };
    },
  };
}
