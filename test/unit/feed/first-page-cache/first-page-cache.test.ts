import { expect } from 'chai';
import { createCursorCodec } from '../../../../src/feed/pages/cursor.js';
import { createFeedService, type FeedPage, type FeedRequest } from '../../../../src/feed/pages/feed-service.js';
import { createFirstPageCache, followOwnWrites, MAX_REFRESHES_IN_FLIGHT, type FirstPageCache, type FirstPageCacheOptions, type PageOwner } from '../../../../src/feed/first-page-cache/first-page-cache.js';
import { createStoredBatches } from '../../../../src/feed/stored-batches.js';
import { compareFeedOrder } from '../../../../src/feed/first-page-cache/first-page-merge.js';
import type { EventStore, FeedQuery, FeedSlice, StoredEvent } from '../../../../src/store/event-store.js';
import { storableEvent } from '../../../../src/store/event-rows.js';
import { canonicalEvent, uuid } from '../../../support/factories.js';

/**
 * A store holding events per organization and project, as `insertEvents` gives them, at
 * the instant each was stored at (`eventAt` gives each one of its own, in the order made), counting the feed reads it answers and
 * reading them newest first from a cursor's position. A read may be held open until released.
 */
function memoryStore() {
  const events = new Map<string, StoredEvent[]>();
  const reads: FeedQuery[] = [];
  let gate: Promise<void> | undefined;
  const key = (org: string, project: string) => `${org}/${project}`;
  const store = {
    async listEvents(query: FeedQuery): Promise<FeedSlice> {
      reads.push(query);
      const held = [...(events.get(key(query.orgId, query.projectId)) ?? [])].reverse();
      await gate;
      const { after } = query;
      return { events: held.filter((e) => after === undefined || compareFeedOrder(e.position, after) < 0).slice(0, query.limit) };
    },
    async insertEvents(stored: readonly ReturnType<typeof storableEvent>[]) {
      for (const s of stored) {
        const k = key(s.event.org_id, s.event.project_id);
        const position = { occurredAt: s.storedAt, id: s.event.id };
        events.set(k, [...(events.get(k) ?? []), { event: s.event, position }]);
      }
    },
  } as unknown as EventStore;
  return {
    store,
    reads,
    /** Every event written, oldest first, as the store reads it back. */
    written: () => [...events.values()].flat().sort((a, b) => compareFeedOrder(a.position, b.position)),
    hold(): () => void {
      let release!: () => void;
      gate = new Promise<void>((resolve) => (release = resolve));
      return () => {
        gate = undefined;
        release();
      };
    },
  };
}

const cursors = createCursorCodec(Buffer.alloc(32, 7));
const page = (orgId: string, projectId: string, overrides: Partial<FeedRequest> = {}): FeedRequest => ({ orgId, projectId, filters: {}, cursor: undefined, limit: 10, ...overrides });
const ids = (p: { items: { id: string }[] }) => p.items.map((e) => e.id);
/** Lets every read already answered run its continuations (a page kept after a write's read). */
const settled = () => new Promise<void>((resolve) => setImmediate(resolve));

/** An event of the project stored a millisecond after the last one made: pages order them as made. */
let made = 0;
const eventAt = (orgId: string, projectId: string) => {
  made += 1;
  return storableEvent(canonicalEvent({ org_id: orgId, project_id: projectId, occurred_at: new Date(Date.UTC(2026, 0, 1) + made).toISOString() }));
};

describe('first page cache', () => {
  let clock: number;
  const setup = (maxAgeMs: number) => {
    clock = 1_000_000;
    const memory = memoryStore();
    const firstPages = createFirstPageCache<FeedSlice, StoredEvent>({ maxAgeMs, now: () => clock });
    const stored = createStoredBatches();
    followOwnWrites(stored, firstPages);
    const store = stored.observe(memory.store);
    const feed = createFeedService({ store, cursors, firstPages });
    const write = (orgId: string, projectId: string) => store.insertEvents([eventAt(orgId, projectId)]);
    // A write behind the process's back: another gateway's ingestion.
    const elsewhere = (orgId: string, projectId: string) => memory.store.insertEvents([eventAt(orgId, projectId)]);
    return { memory, firstPages, feed, write, elsewhere };
  };

  it('serves a first page again without a store read until it is maxAgeMs old, counted from the read, then reads again', async () => {
    const { memory, feed, write, elsewhere } = setup(1000);
    const [org, project] = [uuid(), uuid()];
    await write(org, project);
    const first = await feed.listEvents(page(org, project));
    await elsewhere(org, project);
    // Short of the last quarter of the age, where a served page is read again ahead of its expiry.
    clock += 749;
    expect(await feed.listEvents(page(org, project)), 'within the age: the page as read, without the other process\'s event').to.deep.equal(first);
    expect(memory.reads).to.have.length(1);
    clock += 251;
    const later = await feed.listEvents(page(org, project));
    expect(memory.reads, 'at the age: read again').to.have.length(2);
    expect(ids(later)).to.have.length(2);
  });

  it("brings a project's kept page up to date in memory when this process writes to it, without a store read, and leaves other projects' pages as they were", async () => {
    const { memory, feed, write } = setup(60_000);
    const [org, project, other] = [uuid(), uuid(), uuid()];
    await write(org, project);
    await write(org, other);
    await feed.listEvents(page(org, project));
    const otherPage = await feed.listEvents(page(org, other));
    await write(org, project);
    const after = await feed.listEvents(page(org, project));
    expect(ids(after), 'the new event, at once, newest first').to.deep.equal(memory.written().filter((e) => e.event.project_id === project).reverse().map((e) => e.event.id));
    expect(await feed.listEvents(page(org, other))).to.deep.equal(otherPage);
    expect(memory.reads.map((q) => q.projectId), 'no read after the write').to.deep.equal([project, other]);
  });

  it('drops the pages of the projects of an insert that failed (some of its rows may be stored), and reads a served one again before the next request', async () => {
    const { memory, feed, firstPages } = setup(60_000);
    const stored = createStoredBatches();
    followOwnWrites(stored, firstPages);
    const failing = stored.observe({
      insertEvents: async (events: readonly ReturnType<typeof storableEvent>[]) => {
        await memory.store.insertEvents(events);
        throw new Error('the store went away after the rows landed');
      },
    } as unknown as EventStore);
    const [org, project] = [uuid(), uuid()];
    await memory.store.insertEvents([eventAt(org, project)]);
    await feed.listEvents(page(org, project));
    await feed.listEvents(page(org, project));
    await failing.insertEvents([eventAt(org, project)]).catch(() => undefined);
    await settled();
    expect(memory.reads, 'read again by the failed write, before any request').to.have.length(2);
    expect(ids(await feed.listEvents(page(org, project))), 'the row the failed insert stored').to.have.length(2);
    expect(memory.reads, 'from memory').to.have.length(2);
  });

  it("hands each project of one insert its own events once, only where it follows the project, a project id in two organizations being two projects", async () => {
    const stored = createStoredBatches();
    const [orgA, orgB, project, other, unfollowed] = [uuid(), uuid(), uuid(), uuid(), uuid()];
    const written: string[] = [];
    followOwnWrites(stored, {
      invalidate: () => expect.fail('a successful insert drops nothing'),
      follows: ({ projectId }) => projectId !== unfollowed,
      written: ({ orgId, projectId }, events) => written.push(`${orgId}/${projectId}: ${events.map((e) => e.event.id).join(',')}`),
    });
    const store = stored.observe({ insertEvents: async () => undefined } as unknown as EventStore);
    const events = [orgA, orgA, orgB, orgA, orgA, orgB, orgA].map((org, i) => eventAt(org, [project, project, project, other, project, project, unfollowed][i]!));
    await store.insertEvents(events);
    const idsOf = (...at: number[]) => at.map((i) => events[i]!.event.id).join(',');
    expect(written).to.deep.equal([`${orgA}/${project}: ${idsOf(0, 1, 4)}`, `${orgA}/${other}: ${idsOf(3)}`, `${orgB}/${project}: ${idsOf(2, 5)}`]);
  });

  it("drops each project's pages once for an insert that failed", async () => {
    const stored = createStoredBatches();
    const dropped: string[] = [];
    followOwnWrites(stored, { invalidate: ({ orgId, projectId }) => dropped.push(`${orgId}/${projectId}`), follows: () => true, written: () => expect.fail('a failed insert brings nothing up to date') });
    const [orgA, orgB, project, other] = [uuid(), uuid(), uuid(), uuid()];
    const store = stored.observe({ insertEvents: async () => Promise.reject(new Error('refused')) } as unknown as EventStore);
    await store.insertEvents([eventAt(orgA, project), eventAt(orgB, project), eventAt(orgA, other), eventAt(orgA, project)]).catch(() => undefined);
    expect(dropped).to.deep.equal([`${orgA}/${project}`, `${orgA}/${other}`, `${orgB}/${project}`]);
  });

  it("brings a project's pages up to date when this process writes events that spell its ids in upper case", async () => {
    const { memory, feed, write } = setup(60_000);
    const [org, project] = [uuid(), uuid()];
    await write(org, project);
    await feed.listEvents(page(org, project));
    await write(org.toUpperCase(), project.toUpperCase());
    expect(ids(await feed.listEvents(page(org, project))), 'the new event').to.have.length(2);
    expect(memory.reads, 'from memory').to.have.length(1);
  });

  it('drops pages kept under ids in one case when told of a write under the other', async () => {
    const cache = createFirstPageCache<number>({ maxAgeMs: 60_000 });
    const [org, project] = [uuid(), uuid()];
    let runs = 0;
    const read = (owner: { orgId: string; projectId: string }) => cache.read(owner, 'first page', async () => (runs += 1));
    await read({ orgId: org.toUpperCase(), projectId: project });
    cache.invalidate({ orgId: org, projectId: project.toUpperCase() });
    expect(await read({ orgId: org, projectId: project })).to.equal(2);
    expect(runs).to.equal(2);
  });

  it('brings a read that a write of this process overtook up to date with the write, and keeps it', async () => {
    const { memory, feed, write, firstPages } = setup(60_000);
    const [org, project] = [uuid(), uuid()];
    const release = memory.hold();
    const inFlight = feed.listEvents(page(org, project));
    await write(org, project);
    release();
    expect(ids(await inFlight), 'read before the write landed, and the write').to.have.length(1);
    expect(firstPages.size).to.equal(1);
    expect(ids(await feed.listEvents(page(org, project)))).to.have.length(1);
    expect(memory.reads).to.have.length(1);
  });

  it('answers a request that joined a read after a write overtook it with the write too', async () => {
    const { memory, feed, write, firstPages } = setup(60_000);
    const [org, project] = [uuid(), uuid()];
    const release = memory.hold();
    const first = feed.listEvents(page(org, project));
    await write(org, project);
    // Asks after the write, and shares the store read the first request began before it.
    const joined = feed.listEvents(page(org, project));
    release();
    expect(ids(await first)).to.have.length(1);
    expect(ids(await joined), 'the shared read, brought up to date with the write').to.have.length(1);
    expect(memory.reads, 'one store read for both').to.have.length(1);
    expect(firstPages.size, 'kept, up to date').to.equal(1);
  });

  it('does not keep a read that a failed insert of its project overtook', async () => {
    const { memory, feed, firstPages } = setup(60_000);
    const stored = createStoredBatches();
    followOwnWrites(stored, firstPages);
    const failing = stored.observe({ insertEvents: async () => Promise.reject(new Error('refused')) } as unknown as EventStore);
    const [org, project] = [uuid(), uuid()];
    const release = memory.hold();
    const inFlight = feed.listEvents(page(org, project));
    await failing.insertEvents([eventAt(org, project)]).catch(() => undefined);
    release();
    await inFlight;
    expect(firstPages.size, 'nothing kept from a read the failed insert overtook').to.equal(0);
  });

  it('keeps pages apart by organization, project, filters and page size', async () => {
    const { memory, feed, write } = setup(60_000);
    const [orgA, orgB, project] = [uuid(), uuid(), uuid()];
    // The same project id in two organizations.
    await write(orgA, project);
    await write(orgB, project);
    await write(orgB, project);
    const a = await feed.listEvents(page(orgA, project));
    const b = await feed.listEvents(page(orgB, project));
    expect(ids(a)).to.have.length(1);
    expect(ids(b)).to.have.length(2);
    expect(ids(a).some((id) => ids(b).includes(id)), 'no event of one organization in the other\'s page').to.equal(false);
    expect(await feed.listEvents(page(orgA, project))).to.deep.equal(a);
    expect(await feed.listEvents(page(orgB, project))).to.deep.equal(b);
    expect(memory.reads).to.have.length(2);
    await feed.listEvents(page(orgA, project, { filters: { domain: 'devices' } }));
    await feed.listEvents(page(orgA, project, { limit: 1 }));
    const one = await feed.listEvents(page(orgB, project, { limit: 1 }));
    expect(memory.reads).to.have.length(5);
    const cursor = one.meta.next_cursor!;
    const next = await feed.listEvents(page(orgB, project, { limit: 1, cursor }));
    expect(ids(next), "the page after B's kept first page, cut from it (below)").to.deep.equal(ids(b).slice(1));
    expect(memory.reads).to.have.length(5);
  });

  describe('the page after a kept first page', () => {
    /** `count` events written to one project by another process, and a feed that counts where its pages by cursor came from. */
    const project = async (count: number, maxAgeMs = 60_000) => {
      const parts = setup(maxAgeMs);
      const served: string[] = [];
      const feed = createFeedService({ store: parts.memory.store, cursors, firstPages: parts.firstPages, cursorPageServed: (source) => served.push(source) });
      const [org, id] = [uuid(), uuid()];
      for (let n = 0; n < count; n += 1) await parts.elsewhere(org, id);
      const ask = (overrides: Partial<FeedRequest> = {}) => feed.listEvents(page(org, id, { limit: 2, ...overrides }));
      return { ...parts, feed, org, id, served, ask };
    };
    const walk = async (ask: (overrides: Partial<FeedRequest>) => Promise<FeedPage>) => {
      const pages: string[][] = [];
      let cursor: string | undefined;
      do {
        const next = await ask({ cursor });
        pages.push(ids(next));
        cursor = next.meta.next_cursor ?? undefined;
      } while (cursor !== undefined);
      return pages;
    };

    it('cuts the second page from the kept first page, read two pages deep, and reads the third from the store', async () => {
      const { memory, ask, served, org, id } = await project(7);
      const first = await ask();
      expect(memory.reads.map((q) => q.limit), 'a first page of 2 read 5 deep').to.deep.equal([5]);
      const second = await ask({ cursor: first.meta.next_cursor! });
      expect(memory.reads, 'the second page from memory').to.have.length(1);
      expect(second.meta).to.include({ count: 2, has_more: true });
      const third = await ask({ cursor: second.meta.next_cursor! });
      await ask({ cursor: second.meta.next_cursor! });
      expect(memory.reads.map((q) => q.limit), 'the third page read, every time: a page by cursor is never kept of its own').to.deep.equal([5, 3, 3]);
      expect(served).to.deep.equal(['memory', 'store', 'store']);
      // The same walk with nothing kept: every page read from the store, the same events.
      const plain = createFeedService({ store: memory.store, cursors });
      expect([ids(first), ids(second), ids(third)]).to.deep.equal((await walk((o) => plain.listEvents(page(org, id, { limit: 2, ...o })))).slice(0, 3));
    });

    it('cuts the rest of a range the kept page held whole, with no page after it', async () => {
      const { memory, ask } = await project(3);
      const first = await ask();
      const second = await ask({ cursor: first.meta.next_cursor! });
      expect(memory.reads).to.have.length(1);
      expect(second.meta).to.include({ count: 1, has_more: false, next_cursor: null });
    });

    it('still cuts a page by a cursor given out before a page of events was written above it, brought up to date', async () => {
      const { memory, firstPages, ask, org, id, elsewhere } = await project(6);
      const first = await ask();
      const before = memory.reads.length;
      await elsewhere(org, id);
      await elsewhere(org, id);
      firstPages.written({ orgId: org, projectId: id }, memory.written().slice(-2));
      const second = await ask({ cursor: first.meta.next_cursor! });
      expect(memory.reads.length - before, 'from memory').to.equal(0);
      expect(ids(second), 'the events after the cursor, as before the writes').to.deep.equal(memory.written().slice(0, 6).reverse().slice(2, 4).map((e) => e.event.id));
    });

    it('counts the kept page as asked, read again ahead of its expiry, only when a page is cut from it', async () => {
      const { memory, ask } = await project(7, 1000);
      const first = await ask();
      const second = await ask({ cursor: first.meta.next_cursor! });
      // In the last quarter of the kept page's age.
      clock += 800;
      await ask({ cursor: second.meta.next_cursor! });
      expect(memory.reads.map((q) => q.limit), 'a third page read from the store reads nothing else').to.deep.equal([5, 3]);
      await ask({ cursor: first.meta.next_cursor! });
      expect(memory.reads.map((q) => q.limit), 'a second page cut from the kept page reads it again ahead of its expiry').to.deep.equal([5, 3, 5]);
    });

    it('reads a page by cursor from the store where no first page may be served', async () => {
      const { memory, ask, served } = await project(6, 1000);
      const first = await ask();
      clock += 1000;
      await ask({ cursor: first.meta.next_cursor! });
      expect(memory.reads, 'the kept page expired').to.have.length(2);
      expect(served).to.deep.equal(['store']);
    });
  });

  it('reads the store for every page when maxAgeMs is 0', async () => {
    const { memory, feed, firstPages } = setup(0);
    const [org, project] = [uuid(), uuid()];
    await feed.listEvents(page(org, project));
    await feed.listEvents(page(org, project));
    expect(memory.reads).to.have.length(2);
    expect(firstPages.size).to.equal(0);
  });

  it('holds at most its capacity, the oldest dropped first', async () => {
    clock = 0;
    const cache = createFirstPageCache<number>({ maxAgeMs: 1000, capacity: 2, now: () => clock });
    const owner = { orgId: uuid(), projectId: uuid() };
    let runs = 0;
    const run = async () => (runs += 1);
    for (const key of ['a', 'b', 'c']) await cache.read(owner, key, run);
    expect(cache.size).to.equal(2);
    await cache.read(owner, 'c', run);
    await cache.read(owner, 'a', run);
    expect(runs, "'a' was dropped, 'c' kept").to.equal(4);
  });

  it('holds pages weighing at most its weight together, the oldest dropped first, and none heavier alone', async () => {
    clock = 0;
    // Pages are numbers that weigh what they are.
    let evicted = 0;
    const cache = createFirstPageCache<number>({ maxAgeMs: 1000, capacity: 100, weight: { of: (page) => page, atMost: 10 }, now: () => clock, evicted: () => (evicted += 1) });
    const owner = { orgId: uuid(), projectId: uuid() };
    const weights: Record<string, number> = { a: 4, b: 4, c: 5, heavy: 11 };
    const runs: string[] = [];
    const ask = (key: string) => cache.read(owner, key, async () => (runs.push(key), weights[key]!));
    for (const key of ['a', 'b', 'c']) await ask(key);
    expect(cache.size, "'a' made way for 'c'").to.equal(2);
    await ask('b');
    await ask('c');
    expect(runs, "'b' and 'c' from memory").to.deep.equal(['a', 'b', 'c']);
    await ask('heavy');
    await ask('heavy');
    expect(runs.filter((key) => key === 'heavy'), 'a page over the whole weight is never kept').to.have.length(2);
    expect(cache.size, 'and drops nothing to make room').to.equal(2);
    expect(evicted, "one page made way: 'a'").to.equal(1);
  });

  it('keeps its weight through pages brought up to date, dropped and dropped all', async () => {
    clock = 0;
    let evicted = 0;
    const cache = createFirstPageCache<number, number>({ maxAgeMs: 1000, capacity: 100, weight: { of: (page) => page, atMost: 10 }, now: () => clock, evicted: () => (evicted += 1) });
    const [one, two] = [
      { orgId: uuid(), projectId: uuid() },
      { orgId: uuid(), projectId: uuid() },
    ];
    const runs: string[] = [];
    const add = (page: number, written: readonly number[]) => written.reduce((sum, n) => sum + n, page);
    const ask = (owner: PageOwner, key: string, weight: number) => cache.read(owner, key, async () => (runs.push(key), weight), add);
    await ask(one, 'a', 3);
    await ask(two, 'b', 3);
    cache.written(one, [4]);
    expect([cache.size, await ask(one, 'a', 0)], "'a' grown to 7: both held, at the weight").to.deep.equal([2, 7]);
    cache.written(one, [1]);
    expect([cache.size, evicted], "'a' grown past it: the oldest, 'a', made way").to.deep.equal([1, 1]);
    cache.invalidate(two);
    await ask(one, 'c', 6);
    await ask(one, 'd', 4);
    expect(cache.size, "nothing left of 'b' after its drop: 'c' and 'd' fit").to.equal(2);
    cache.invalidateAll();
    await ask(one, 'e', 10);
    await ask(one, 'e', 10);
    expect(runs, "nothing left after dropping all: 'e' fits alone, from memory").to.deep.equal(['a', 'b', 'c', 'd', 'e']);
    expect(evicted, 'a drop and a drop of all make no room: not counted').to.equal(1);
  });

  it('lets go of expired pages as reads come, not only at its capacity', async () => {
    clock = 0;
    const cache = createFirstPageCache<number>({ maxAgeMs: 1000, capacity: 100, now: () => clock });
    const owner = { orgId: uuid(), projectId: uuid() };
    for (const key of ['a', 'b', 'c']) await cache.read(owner, key, async () => 1);
    clock = 600;
    await cache.read(owner, 'd', async () => 1);
    expect(cache.size, 'none expired yet').to.equal(4);
    clock = 1000;
    await cache.read(owner, 'e', async () => 1);
    expect(cache.size, "'a', 'b' and 'c' expired; 'd' and 'e' held").to.equal(2);
  });

  it('keeps no failed read', async () => {
    const cache = createFirstPageCache<number>({ maxAgeMs: 1000 });
    const owner = { orgId: uuid(), projectId: uuid() };
    await cache.read(owner, 'k', () => Promise.reject(new Error('store down'))).catch(() => undefined);
    expect(cache.size).to.equal(0);
    expect(await cache.read(owner, 'k', async () => 1)).to.equal(1);
  });

  describe('watched', () => {
    const counting = () => {
      let runs = 0;
      let gate: Promise<void> | undefined;
      return {
        // Each read answers its own number, counted when it begins.
        run: async () => {
          const n = ++runs;
          await gate;
          return n;
        },
        // Reads that begin from now wait until the returned release; each hold its own.
        hold() {
          let release!: () => void;
          const held = new Promise<void>((resolve) => (release = resolve));
          gate = held;
          return () => {
            if (gate === held) gate = undefined;
            release();
          };
        },
        get runs() {
          return runs;
        },
      };
    };

    it('keeps nothing until the watch sees, then keeps pages', async () => {
      const cache = createFirstPageCache<number>({ maxAgeMs: 60_000, watched: true });
      const owner = { orgId: uuid(), projectId: uuid() };
      const store = counting();
      await cache.read(owner, 'k', store.run);
      await cache.read(owner, 'k', store.run);
      expect(store.runs, 'blind: every page read').to.equal(2);
      cache.see(60_000);
      await cache.read(owner, 'k', store.run);
      await cache.read(owner, 'k', store.run);
      expect(store.runs, 'seeing: the page kept').to.equal(3);
    });

    it('serves kept pages only for as long as the watch\'s last poll vouches, and again once the next one does', async () => {
      let clock = 0;
      const cache = createFirstPageCache<number>({ maxAgeMs: 60_000, watched: true, now: () => clock });
      const owner = { orgId: uuid(), projectId: uuid() };
      const store = counting();
      cache.see(1000);
      await cache.read(owner, 'k', store.run);
      clock = 999;
      await cache.read(owner, 'k', store.run);
      expect(store.runs, 'within what the poll vouched for: from memory').to.equal(1);
      // No poll since, and no timer that ran to say so: the clock alone stops serving.
      clock = 1000;
      await cache.read(owner, 'k', store.run);
      expect(store.runs, 'past it: read from the store').to.equal(2);
      cache.see(1000);
      await cache.read(owner, 'k', store.run);
      expect(store.runs, 'the next poll vouches: from memory again').to.equal(2);
    });

    it('keeps no read that began before the watch first saw, though it ends after', async () => {
      const cache = createFirstPageCache<number>({ maxAgeMs: 60_000, watched: true });
      const owner = { orgId: uuid(), projectId: uuid() };
      const store = counting();
      const release = store.hold();
      const early = cache.read(owner, 'k', store.run);
      cache.see(60_000);
      release();
      await early;
      expect(cache.size, 'no window of the watch covers the writes before its first poll').to.equal(0);
    });

    it('serves no kept page while the watch is blind, and keeps its pages and the reads in flight through the blind spell', async () => {
      const cache = createFirstPageCache<number>({ maxAgeMs: 60_000, watched: true });
      const owner = { orgId: uuid(), projectId: uuid() };
      const store = counting();
      cache.see(60_000);
      await cache.read(owner, 'kept', store.run);
      const release = store.hold();
      const inFlight = cache.read(owner, 'in flight', store.run);
      cache.blind();
      release();
      await inFlight;
      expect(cache.size, 'the page kept before and the read in flight').to.equal(2);
      await cache.read(owner, 'kept', store.run);
      expect(store.runs, 'blind: the kept page read again from the store').to.equal(3);
      await cache.read(owner, 'read while blind', store.run);
      expect(cache.size, 'a read while blind kept too').to.equal(3);
      cache.see(60_000);
      expect(await cache.read(owner, 'kept', store.run), 'the page the blind read kept').to.equal(3);
      expect(await cache.read(owner, 'in flight', store.run)).to.equal(2);
      expect(await cache.read(owner, 'read while blind', store.run)).to.equal(4);
      expect(store.runs, 'seeing again: every page from memory').to.equal(4);
    });

    it('drops the pages of a project written during a blind spell, as the poll that ends it reports', async () => {
      const cache = createFirstPageCache<number>({ maxAgeMs: 60_000, watched: true });
      const [written, quiet] = [{ orgId: uuid(), projectId: uuid() }, { orgId: uuid(), projectId: uuid() }];
      const store = counting();
      cache.see(60_000);
      await cache.read(written, 'written', store.run);
      await cache.read(quiet, 'quiet', store.run);
      cache.blind();
      cache.invalidate(written);
      cache.see(60_000);
      await cache.read(written, 'written', store.run);
      await cache.read(quiet, 'quiet', store.run);
      expect(store.runs, 'the written project read again, the other from memory').to.equal(3);
    });

    describe('read again when written', () => {
      const polled = async (cache: FirstPageCache<number>, owner: PageOwner, key: string, run: () => Promise<number>) => {
        await cache.read(owner, key, run);
        await cache.read(owner, key, run);
      };
      /** A cache the watch vouches for, holding a page ('k0', 'k1', …) of each of `count` projects, served from memory since it was read. */
      const servedPages = async (count: number, options: Partial<FirstPageCacheOptions> = {}) => {
        const cache = createFirstPageCache<number>({ maxAgeMs: 60_000, watched: true, ...options });
        const owners = Array.from({ length: count }, () => ({ orgId: uuid(), projectId: uuid() }));
        const store = counting();
        cache.see(1_000_000);
        for (const [i, owner] of owners.entries()) await polled(cache, owner, `k${i}`, store.run);
        return { cache, owners, store };
      };
      const servedPage = async (options: Partial<FirstPageCacheOptions> = {}) => {
        const { cache, owners, store } = await servedPages(1, options);
        return { cache, owner: owners[0]!, store };
      };

      it('reads a page served from memory again when its project is written, and serves the new page from memory', async () => {
        let refreshes = 0;
        const { cache, owner, store } = await servedPage({ refreshed: () => (refreshes += 1) });
        cache.invalidate(owner);
        expect(store.runs, 'read again by the write').to.equal(2);
        await settled();
        expect(await cache.read(owner, 'k0', store.run)).to.equal(2);
        expect(store.runs, 'from memory').to.equal(2);
        expect(refreshes).to.equal(1);
      });

      it('does not read again a page that was not served since it was kept', async () => {
        const cache = createFirstPageCache<number>({ maxAgeMs: 60_000, watched: true });
        const owner = { orgId: uuid(), projectId: uuid() };
        const store = counting();
        cache.see(60_000);
        await cache.read(owner, 'k0', store.run);
        cache.invalidate(owner);
        await settled();
        expect(store.runs).to.equal(1);
        expect(cache.size).to.equal(0);
      });

      it('lets a request wait for the read in flight instead of reading the store itself, and reads the page again at the next write', async () => {
        const { cache, owner, store } = await servedPage();
        const release = store.hold();
        cache.invalidate(owner);
        const asked = cache.read(owner, 'k0', store.run);
        release();
        expect(await asked).to.equal(2);
        expect(store.runs).to.equal(2);
        await settled();
        cache.invalidate(owner);
        expect(store.runs, 'the page a request waited for is one dashboards poll').to.equal(3);
      });

      it('keeps no page from a read that a second write overtook, and reads it again once it settles if a request waited for it', async () => {
        const { cache, owner, store } = await servedPage();
        const release = store.hold();
        cache.invalidate(owner);
        const waited = cache.read(owner, 'k0', store.run);
        cache.invalidate(owner);
        expect(store.runs, 'one read a page at a time').to.equal(2);
        release();
        expect(await waited, 'the read it waited for, begun before the second write').to.equal(2);
        await settled();
        expect(store.runs, 'read again after the overtaken read settled').to.equal(3);
        await settled();
        expect(await cache.read(owner, 'k0', store.run), 'the read begun after the second write').to.equal(3);
        expect(store.runs).to.equal(3);
      });

      it('lets no request wait for a read again that a later write, or a drop of every page, overtook', async () => {
        const { cache, owners: [a, b], store } = await servedPages(2);
        const release = store.hold();
        cache.invalidate(a!);
        cache.invalidate(b!);
        cache.invalidate(a!);
        const afterWrite = cache.read(a!, 'k0', store.run);
        cache.invalidateAll();
        const afterDrop = cache.read(b!, 'k1', store.run);
        release();
        expect(await afterWrite, 'its own read, begun after the write').to.equal(5);
        expect(await afterDrop, 'its own read, begun after the drop').to.equal(6);
      });

      it("keeps nothing from a read again that ends after a request's own read of the page", async () => {
        let clock = 0;
        const { cache, owner, store } = await servedPage({ now: () => clock });
        const releaseRefresh = store.hold();
        cache.invalidate(owner);
        // Blind, the request reads the store itself, and its read ends first.
        cache.blind();
        clock = 10;
        const own = store.hold();
        const mine = cache.read(owner, 'k0', store.run);
        own();
        expect(await mine).to.equal(3);
        releaseRefresh();
        await settled();
        cache.see(1_000_000);
        expect(await cache.read(owner, 'k0', store.run), "the request's page, not the older read again").to.equal(3);
      });

      it('does not read again a page whose overtaken read nobody waited for', async () => {
        const { cache, owner, store } = await servedPage();
        const release = store.hold();
        cache.invalidate(owner);
        cache.invalidate(owner);
        release();
        await settled();
        await settled();
        expect(store.runs).to.equal(2);
        expect(cache.size, 'the overtaken read kept nothing').to.equal(0);
      });

      it('lets a request wait for a read again only while the watch vouches for kept pages', async () => {
        const { cache, owner, store } = await servedPage();
        const release = store.hold();
        cache.invalidate(owner);
        cache.blind();
        const own = cache.read(owner, 'k0', store.run);
        release();
        expect(await own, 'blind: its own read').to.equal(3);
      });

      it('lets a request wait for a read again only while a page read when it began may be served', async () => {
        let clock = 0;
        const { cache, owner, store } = await servedPage({ maxAgeMs: 1000, now: () => clock });
        const release = store.hold();
        cache.invalidate(owner);
        clock = 1000;
        const own = cache.read(owner, 'k0', store.run);
        release();
        expect(await own, 'the read again began a whole age ago: its own read').to.equal(3);
      });

      it('reads nothing again when every page is dropped', async () => {
        const { cache, store } = await servedPage();
        cache.invalidateAll();
        await settled();
        expect(store.runs).to.equal(1);
      });

      it('keeps nothing from a read that failed, and a request that waited for it reads the store itself', async () => {
        const cache = createFirstPageCache<number>({ maxAgeMs: 60_000, watched: true });
        const owner = { orgId: uuid(), projectId: uuid() };
        const store = counting();
        let failNext = false;
        const run = async () => {
          const value = await store.run();
          if (failNext) {
            failNext = false;
            throw new Error('the store failed the read');
          }
          return value;
        };
        cache.see(60_000);
        await polled(cache, owner, 'k0', run);
        failNext = true;
        const release = store.hold();
        cache.invalidate(owner);
        const asked = cache.read(owner, 'k0', run);
        release();
        expect(await asked, "the request's own read").to.equal(3);
        expect(store.runs).to.equal(3);
      });

      it(`reads at most ${MAX_REFRESHES_IN_FLIGHT} pages again at a time, and the others when they are asked`, async () => {
        const { cache, owners, store } = await servedPages(MAX_REFRESHES_IN_FLIGHT + 1);
        const release = store.hold();
        const [last, ...first] = [owners.at(-1)!, ...owners.slice(0, -1)];
        for (const owner of first) cache.invalidate(owner);
        expect(store.runs - owners.length).to.equal(MAX_REFRESHES_IN_FLIGHT);
        // Overtaken, the read is no longer waited for, but it still counts until it settles.
        cache.invalidate(first[0]!);
        cache.invalidate(last);
        expect(store.runs - owners.length, 'the last page only dropped').to.equal(MAX_REFRESHES_IN_FLIGHT);
        release();
        await settled();
        expect(cache.size).to.equal(MAX_REFRESHES_IN_FLIGHT - 1);
        const runs = store.runs;
        await cache.read(last, `k${owners.length - 1}`, store.run);
        expect(store.runs, 'the dropped page read when asked').to.equal(runs + 1);
      });

      it('starts no read again once closed, and closes once the reads in flight have settled', async () => {
        const { cache, owners: [a, b], store } = await servedPages(2);
        const release = store.hold();
        cache.invalidate(a!);
        let closedYet = false;
        const closing = cache.close().then(() => (closedYet = true));
        await settled();
        expect(closedYet, 'a read again still in flight').to.equal(false);
        cache.invalidate(b!);
        expect(store.runs, 'no read again after close').to.equal(3);
        release();
        await closing;
      });
    });

    describe('brought up to date with what was written', () => {
      /** Pages are numbers; what was written adds to them, and a -1 is something no merge can tell (a page it drops). */
      const add = (page: number, written: readonly number[]) => (written.includes(-1) ? undefined : written.reduce((sum, n) => sum + n, page));
      /** A cache the watch vouches for on a clock of the test's, with one project whose pages are `merged` (merged as written) and `plain` (kept with no merge). */
      const mergingPages = (options: Partial<FirstPageCacheOptions> = {}) => {
        const clock = { now: 0 };
        const cache = createFirstPageCache<number, number>({ maxAgeMs: 1000, watched: true, now: () => clock.now, ...options });
        const owner = { orgId: uuid(), projectId: uuid() };
        const store = counting();
        cache.see(1_000_000);
        const ask = async (key: 'merged' | 'plain') => cache.read(owner, key, store.run, key === 'merged' ? add : undefined);
        return { cache, owner, store, clock, ask };
      };

      it('serves a page brought up to date from memory, without reading it again, and drops and reads again a page kept with no merge', async () => {
        let merged = 0;
        let refreshed = 0;
        const { cache, owner, store, ask } = mergingPages({ merged: () => (merged += 1), refreshed: () => (refreshed += 1) });
        expect([await ask('merged'), await ask('merged'), await ask('plain'), await ask('plain')]).to.deep.equal([1, 1, 2, 2]);
        cache.written(owner, [10, 100]);
        expect(store.runs, 'only the page with no merge read again').to.equal(3);
        await settled();
        expect(await ask('merged'), 'the kept page and what was written').to.equal(111);
        expect(await ask('plain'), 'the page read again').to.equal(3);
        expect(store.runs, 'both from memory').to.equal(3);
        expect([merged, refreshed]).to.deep.equal([1, 1]);
        cache.written(owner, [0]);
        expect(merged, 'a write that changes no page is no page brought up to date').to.equal(1);
      });

      it('drops a page its merge cannot bring up to date, reading it again if it was served', async () => {
        const { cache, owner, store, ask } = mergingPages();
        await ask('merged');
        await ask('merged');
        cache.written(owner, [-1]);
        expect(store.runs, 'read again').to.equal(2);
        await settled();
        expect(await ask('merged')).to.equal(2);
      });

      it("counts a page's age from its store read, however often it was brought up to date, and brings no expired page back", async () => {
        const { cache, owner, store, clock, ask } = mergingPages();
        await ask('merged');
        clock.now = 700;
        cache.written(owner, [10]);
        expect(await ask('merged'), 'brought up to date, from memory').to.equal(11);
        clock.now = 1000;
        cache.written(owner, [100]);
        expect(store.runs, 'expired: dropped, and read again as it was served').to.equal(2);
        await settled();
        expect(await ask('merged'), 'the page read again, not the expired one brought up to date').to.equal(2);
      });

      it('reads a page served in the last quarter of its age again, serving the kept one meanwhile, and then the new one', async () => {
        let refreshed = 0;
        const { store, clock, ask } = mergingPages({ refreshed: () => (refreshed += 1) });
        await ask('merged');
        clock.now = 749;
        await ask('merged');
        expect(store.runs, 'not yet').to.equal(1);
        clock.now = 750;
        const release = store.hold();
        expect(await ask('merged'), 'the kept page, while its read again runs').to.equal(1);
        expect(await ask('merged'), 'one read again at a time').to.equal(1);
        expect([store.runs, refreshed]).to.deep.equal([2, 1]);
        release();
        await settled();
        clock.now = 1499;
        expect(await ask('merged'), 'the page read at 750, within its age and short of its last quarter').to.equal(2);
        expect(store.runs).to.equal(2);
      });

      it('brings a page read again after a write up to date as it brings the page it replaced', async () => {
        const { cache, owner, store, ask } = mergingPages();
        await ask('merged');
        await ask('merged');
        cache.invalidate(owner);
        await settled();
        expect(store.runs, 'read again after the write').to.equal(2);
        cache.written(owner, [10]);
        expect(await ask('merged')).to.equal(12);
        expect(store.runs, 'from memory').to.equal(2);
      });

      it('keeps a read in flight when its project is written brought up to date with what was written, and one with no merge not at all', async () => {
        const { cache, owner, store, ask } = mergingPages();
        const release = store.hold();
        const [merged, plain] = [ask('merged'), ask('plain')];
        cache.written(owner, [10]);
        cache.written(owner, [100]);
        release();
        expect(await Promise.all([merged, plain]), 'each request answered with its read, brought up to date where it can be').to.deep.equal([111, 2]);
        expect(await ask('merged'), 'kept with both windows').to.equal(111);
        expect(await ask('plain'), 'not kept: read again').to.equal(3);
        expect(store.runs).to.equal(3);
      });

      it('keeps a read again that windows reported while it ran brought up to date with them, and answers a request that waited for it so', async () => {
        let refreshed = 0;
        const { cache, owner, store, clock, ask } = mergingPages({ refreshed: () => (refreshed += 1) });
        await ask('merged');
        clock.now = 800;
        const release = store.hold();
        expect(await ask('merged'), 'the kept page; read again ahead of its expiry').to.equal(1);
        cache.written(owner, [10]);
        expect(await ask('merged'), 'the kept page brought up to date').to.equal(11);
        expect(refreshed, 'one read again, not one per window').to.equal(1);
        clock.now = 1000;
        const waited = ask('merged');
        cache.written(owner, [100]);
        release();
        expect(await waited, 'the read again, with both windows').to.equal(112);
        expect(await ask('merged'), 'kept').to.equal(112);
        expect(store.runs).to.equal(2);
      });

      it('brings a read in flight up to date only with the windows reported after it began, and keeps none that a dropping write overtook', async () => {
        const { cache, owner, store, ask } = mergingPages();
        cache.written(owner, [1000]);
        const release = store.hold();
        const first = ask('merged');
        cache.written(owner, [100]);
        release();
        expect(await first, 'the window before it began not applied').to.equal(101);
        expect(await ask('merged'), 'kept').to.equal(101);
        const again = store.hold();
        cache.invalidate(owner);
        const second = ask('merged');
        cache.written(owner, [10]);
        cache.invalidate(owner);
        again();
        expect(await second, 'the read again it waited for, brought up to date').to.equal(12);
        await settled();
        expect(await ask('merged'), 'a write that dropped the pages came after it began: not kept, and read again as a request waited for it').to.equal(3);
        expect(store.runs).to.equal(3);
      });

      it('answers a request that waited for a read again with the windows reported before it came, though a dropping write overtakes the read after', async () => {
        const { cache, owner, store, clock, ask } = mergingPages();
        await ask('merged');
        clock.now = 800;
        const release = store.hold();
        await ask('merged');
        cache.written(owner, [10]);
        expect(await ask('merged'), 'shown with the window').to.equal(11);
        clock.now = 1000;
        const waited = ask('merged');
        cache.invalidate(owner);
        release();
        expect(await waited, 'never without what it was shown').to.equal(12);
      });

      it('takes a read again with no merge out of reach of requests when a window names its project', async () => {
        const { cache, owner, store, ask } = mergingPages();
        await ask('plain');
        await ask('plain');
        const release = store.hold();
        cache.invalidate(owner);
        cache.written(owner, [10]);
        const asked = ask('plain');
        release();
        expect(await asked, 'its own read, after the window').to.equal(3);
        expect(store.runs).to.equal(3);
      });

      it('keeps a page read again ahead of its expiry as a page dashboards poll, read again when a write drops it', async () => {
        const { cache, owner, store, clock, ask } = mergingPages();
        await ask('merged');
        clock.now = 800;
        await ask('merged');
        await settled();
        expect(store.runs, 'read again ahead of its expiry').to.equal(2);
        cache.invalidate(owner);
        expect(store.runs, 'read again after the write, with no request since').to.equal(3);
      });

      it("leaves other projects' pages as they were", async () => {
        const { cache, store, ask } = mergingPages();
        await ask('merged');
        cache.written({ orgId: uuid(), projectId: uuid() }, [10]);
        expect(await ask('merged')).to.equal(1);
        expect(store.runs).to.equal(1);
      });
    });

    it('drops every page and every read in flight when told that too many projects were written to name them', async () => {
      const cache = createFirstPageCache<number>({ maxAgeMs: 60_000, watched: true });
      const [a, b] = [{ orgId: uuid(), projectId: uuid() }, { orgId: uuid(), projectId: uuid() }];
      const store = counting();
      cache.see(60_000);
      await cache.read(a, 'a', store.run);
      const release = store.hold();
      const inFlight = cache.read(b, 'b', store.run);
      cache.invalidateAll();
      release();
      await inFlight;
      expect(cache.size).to.equal(0);
      await cache.read(a, 'a', store.run);
      expect(cache.size, 'kept again after').to.equal(1);
    });
  });
});
