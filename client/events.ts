import type { CanonicalEvent, CanonicalEventPageResponse, EventsQuery } from '../src/generated/schema-types.js';
import { isRecord, unexpectedShape, type ApiRequest, type CallOptions, type Send } from './transport.js';

/** The feed's filters (and page size) for a whole traversal; the client supplies the cursor. */
export type EventFilters = Omit<EventsQuery, 'cursor'>;

/** One page of the feed: its events and its cursor metadata. */
export type EventPage = CanonicalEventPageResponse['data'] & Pick<CanonicalEventPageResponse, 'meta'>;

export interface EventsApi {
  /** One page; pass `cursor` from the previous page's `meta.next_cursor` to get the next. */
  page(projectId: string, query?: EventsQuery, options?: CallOptions): Promise<EventPage>;
  /** Every page, following `meta.next_cursor` until there is none. A page is fetched only when the loop asks for it. */
  listPages(projectId: string, filters?: EventFilters, options?: CallOptions): AsyncGenerator<EventPage, void, undefined>;
  /** Every event of every page, in feed order (newest first). */
  list(projectId: string, filters?: EventFilters, options?: CallOptions): AsyncGenerator<CanonicalEvent, void, undefined>;
}

function queryString(query: EventsQuery): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined) params.append(name, String(value));
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

function isPage(data: unknown, meta: unknown): boolean {
  return (
    isRecord(data) &&
    Array.isArray(data['items']) &&
    isRecord(meta) &&
    typeof meta['has_more'] === 'boolean' &&
    (meta['next_cursor'] === null || typeof meta['next_cursor'] === 'string')
  );
}

export function createEventsApi(send: Send): EventsApi {
  const page = async (projectId: string, query: EventsQuery = {}, options?: CallOptions): Promise<EventPage> => {
    const request: ApiRequest = {
      method: 'GET',
      path: `/projects/${encodeURIComponent(projectId)}/events${queryString(query)}`,
      // Reading the feed changes nothing, so a lost answer is simply asked for again.
      retryOnNetworkError: true,
    };
    const body = await send(request, options);
    if (!isPage(body.data, body.meta)) throw unexpectedShape(body, request, 'not a page of events');
    const { items } = body.data as CanonicalEventPageResponse['data'];
    return { items, meta: body.meta as CanonicalEventPageResponse['meta'] };
  };

  async function* listPages(projectId: string, filters: EventFilters = {}, options?: CallOptions): AsyncGenerator<EventPage, void, undefined> {
    let cursor: string | undefined;
    for (;;) {
      const current = await page(projectId, { ...filters, cursor }, options);
      yield current;
      const next = current.meta.next_cursor;
      if (next === null) return;
      // A server handing back the cursor it was given would otherwise keep this loop going for ever.
      if (next === cursor) throw new Error(`the event feed of project ${projectId} answered the same cursor twice; stopping`);
      cursor = next;
    }
  }

  async function* list(projectId: string, filters: EventFilters = {}, options?: CallOptions): AsyncGenerator<CanonicalEvent, void, undefined> {
    for await (const current of listPages(projectId, filters, options)) yield* current.items;
  }

  return { page, listPages, list };
}
