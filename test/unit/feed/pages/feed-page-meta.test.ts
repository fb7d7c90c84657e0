import { expect } from 'chai';
import { createCursorCodec } from '../../../../src/feed/pages/cursor.js';
import { createFeedService } from '../../../../src/feed/pages/feed-service.js';
import { NIL_UUID } from '../../../../src/ids/uuid.js';
import type { EventStore, FeedQuery, FeedSlice } from '../../../../src/store/event-store.js';
import { canonicalEvent, uuid } from '../../../support/factories.js';

/** A store that answers each page read with the slice given, recording the queries. */
function storeAnswering(slice: (query: FeedQuery) => FeedSlice) {
  const queries: FeedQuery[] = [];
  const store: Pick<EventStore, 'listEvents'> = {
    async listEvents(query) {
      queries.push(query);
      return slice(query);
    },
  };
  return { store: store as EventStore, queries };
}

const stored = (n: number) => {
  const event = canonicalEvent();
  return { event, position: { occurredAt: `2026-01-01 00:00:${String(59 - n).padStart(2, '0')}.000000`, id: event.id } };
};

describe('feed page meta', () => {
  const cursors = createCursorCodec(Buffer.alloc(32, 7));
  const scope = { orgId: uuid(), projectId: uuid(), filters: {} };

  it('has more after a page when the store found one event past it, and the cursor is the last event shown', async () => {
    const events = [stored(1), stored(2), stored(3)];
    const { store, queries } = storeAnswering(() => ({ events }));
    const page = await createFeedService({ store, cursors }).listEvents({ ...scope, cursor: undefined, limit: 2 });
    expect(queries[0]!.limit, 'one past the page').to.equal(3);
    expect(page.meta).to.include({ count: 2, has_more: true });
    expect(cursors.decode(page.meta.next_cursor!, scope)).to.deep.equal(events[1]!.position);
  });

  it('ends the feed when the store found no more and did not stop early', async () => {
    const { store } = storeAnswering(() => ({ events: [stored(1)] }));
    const page = await createFeedService({ store, cursors }).listEvents({ ...scope, cursor: undefined, limit: 2 });
    expect(page.meta).to.include({ count: 1, has_more: false, next_cursor: null });
  });

  it('answers a short page that goes on below where the store stopped, when it stopped at its bound on work', async () => {
    const resumeAfter = { occurredAt: '2025-01-01 00:00:00.000000', id: NIL_UUID };
    const { store, queries } = storeAnswering((q) => (q.after === undefined ? { events: [stored(1)], resumeAfter } : { events: [stored(9)] }));
    const feed = createFeedService({ store, cursors });
    const first = await feed.listEvents({ ...scope, cursor: undefined, limit: 5 });
    expect(first.meta).to.include({ count: 1, has_more: true });
    const second = await feed.listEvents({ ...scope, cursor: first.meta.next_cursor!, limit: 5 });
    expect(queries[1]!.after, 'the next page reads below everything the first looked at').to.deep.equal(resumeAfter);
    expect(second.meta).to.include({ count: 1, has_more: false });
  });

  it('an empty page that stopped early still has a cursor to go on with', async () => {
    const resumeAfter = { occurredAt: '2025-01-01 00:00:00.000000', id: NIL_UUID };
    const { store } = storeAnswering(() => ({ events: [], resumeAfter }));
    const page = await createFeedService({ store, cursors }).listEvents({ ...scope, cursor: undefined, limit: 5 });
    expect(page.items).to.deep.equal([]);
    expect(page.meta.has_more).to.equal(true);
    expect(cursors.decode(page.meta.next_cursor!, scope)).to.deep.equal(resumeAfter);
  });
});
