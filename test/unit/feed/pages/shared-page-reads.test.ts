import { expect } from 'chai';
import { createCursorCodec } from '../../../../src/feed/pages/cursor.js';
import { createFeedService, type FeedRequest } from '../../../../src/feed/pages/feed-service.js';
import { createSharedReads } from '../../../../src/feed/shared-reads.js';
import { createStoredBatches } from '../../../../src/feed/stored-batches.js';
import type { EventStore, FeedPosition, FeedQuery, StoredEvent } from '../../../../src/store/event-store.js';
import { canonicalEvent, uuid } from '../../../support/factories.js';

/** A store whose reads stay open until released, counting the queries it was sent. */
function gatedStore() {
  const queries: FeedQuery[] = [];
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const store: Pick<EventStore, 'listEvents'> = {
    async listEvents(query) {
      queries.push(query);
      await gate;
      const event = canonicalEvent({ org_id: query.orgId, project_id: query.projectId });
      return { events: [{ event, position: { occurredAt: '2026-01-01 00:00:00.000000', id: event.id } }] satisfies StoredEvent[] };
    },
  };
  return { store: store as EventStore, queries, release };
}

const request = (overrides: Partial<FeedRequest> = {}): FeedRequest => ({
  orgId: uuid(),
  projectId: uuid(),
  filters: {},
  cursor: undefined,
  limit: 10,
  ...overrides,
});

describe('shared page reads', () => {
  it('sends one store query for identical page requests that overlap, and gives each the same page', async () => {
    const { store, queries, release } = gatedStore();
    const feed = createFeedService({ store, cursors: createCursorCodec(Buffer.alloc(32, 1)) });
    const same = request();
    const pages = Promise.all([feed.listEvents(same), feed.listEvents(same), feed.listEvents({ ...same })]);
    release();
    const [a, b, c] = await pages;
    expect(queries).to.have.length(1);
    expect(b).to.deep.equal(a);
    expect(c).to.deep.equal(a);
  });

  it('never shares a read between organizations, projects, filters, positions or page sizes', async () => {
    const { store, queries, release } = gatedStore();
    const cursors = createCursorCodec(Buffer.alloc(32, 1));
    const feed = createFeedService({ store, cursors });
    const base = request();
    const after = (position: FeedPosition) => cursors.encode(position, { orgId: base.orgId, projectId: base.projectId, filters: base.filters });
    const id = uuid();
    const variants = [
      base,
      { ...base, orgId: uuid() },
      { ...base, projectId: uuid() },
      { ...base, filters: { domain: 'devices' } },
      { ...base, filters: { deviceId: uuid() } },
      { ...base, limit: 11 },
      { ...base, cursor: after({ occurredAt: '2026-01-01 00:00:00.000000', id }) },
      // Positions that differ only in the id, or only in the time.
      { ...base, cursor: after({ occurredAt: '2026-01-01 00:00:00.000000', id: uuid() }) },
      { ...base, cursor: after({ occurredAt: '2026-01-01 00:00:00.000001', id }) },
    ];
    const pages = Promise.all(variants.map((v) => feed.listEvents(v)));
    release();
    const answered = await pages;
    expect(queries).to.have.length(variants.length);
    expect(new Set(queries.slice(-3).map((q) => JSON.stringify(q.after))).size).to.equal(3);
    answered.forEach((page, i) => expect(page.items[0]!.org_id).to.equal(variants[i]!.orgId));
  });

  // Found in review: a request that came after this process stored an event joined a read begun before, and was answered without it.
  it('never lets a request that comes after one of its own inserts join a read begun before it', async () => {
    const { store, queries, release } = gatedStore();
    const stored = createStoredBatches();
    const writes = stored.observe({ insertEvents: async () => undefined } as unknown as EventStore);
    const feed = createFeedService({ store, cursors: createCursorCodec(Buffer.alloc(32, 1)), ownWrites: stored });
    const same = request();
    const before = feed.listEvents(same);
    await writes.insertEvents([]);
    const after = feed.listEvents(same);
    const alongside = feed.listEvents(same);
    release();
    await Promise.all([before, after, alongside]);
    expect(queries, 'one read before the insert, one shared by the two after it').to.have.length(2);
  });

  it('shares a read between requests for the page after the same cursor, and reads from its position', async () => {
    const { store, queries, release } = gatedStore();
    const cursors = createCursorCodec(Buffer.alloc(32, 1));
    const feed = createFeedService({ store, cursors });
    const base = request();
    const position = { occurredAt: '2026-01-01 00:00:00.000000', id: uuid() };
    const cursor = cursors.encode(position, { orgId: base.orgId, projectId: base.projectId, filters: base.filters });
    const pages = Promise.all([feed.listEvents({ ...base, cursor }), feed.listEvents({ ...base, cursor }), feed.listEvents(base)]);
    release();
    const [a, b] = await pages;
    expect(queries.map((q) => q.after)).to.deep.equal([position, undefined]);
    expect(b).to.deep.equal(a);
  });

  it('starts a fresh read once the shared one has settled, so no page is older than the request', async () => {
    const reads = createSharedReads<number>();
    let runs = 0;
    const run = async () => ++runs;
    expect(await reads.read('k', run)).to.equal(1);
    expect(await reads.read('k', run)).to.equal(2);
    expect(reads.running).to.equal(0);
  });

  it('gives every caller of a failed read its failure, and the next caller a new read', async () => {
    const reads = createSharedReads<string>();
    let fail = true;
    let runs = 0;
    const run = async () => {
      runs += 1;
      await Promise.resolve();
      if (fail) throw new Error('store down');
      return 'page';
    };
    const outcomes = await Promise.allSettled([reads.read('k', run), reads.read('k', run)]);
    expect(outcomes.map((o) => o.status)).to.deep.equal(['rejected', 'rejected']);
    fail = false;
    expect(await reads.read('k', run)).to.equal('page');
    expect(runs).to.equal(2);
  });
});
