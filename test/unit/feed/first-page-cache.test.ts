import { expect } from 'chai';
import { createCursorCodec } from '../../../src/feed/cursor.js';
import { createFeedService, type FeedRequest } from '../../../src/feed/feed-service.js';
import { createFirstPageCache, dropPagesOnWrites } from '../../../src/feed/first-page-cache.js';
import { createStoredBatches } from '../../../src/feed/stored-batches.js';
import type { EventStore, FeedQuery, FeedSlice } from '../../../src/store/event-store.js';
import { storableEvent } from '../../../src/store/event-rows.js';
import { canonicalEvent, uuid } from '../../support/factories.js';

/**
 * A store holding events per organization and project, as `insertEvents` gives them,
 * counting the feed reads it answers. A read may be held open until released.
 */
function memoryStore() {
  const events = new Map<string, ReturnType<typeof canonicalEvent>[]>();
  const reads: FeedQuery[] = [];
  let gate: Promise<void> | undefined;
  const key = (org: string, project: string) => `${org}/${project}`;
  const store = {
    async listEvents(query: FeedQuery): Promise<FeedSlice> {
      reads.push(query);
      const held = [...(events.get(key(query.orgId, query.projectId)) ?? [])];
      await gate;
      return { events: held.reverse().slice(0, query.limit).map((event) => ({ event, position: { occurredAt: '2026-01-01 00:00:00.000000', id: event.id } })) };
    },
    async insertEvents(stored: readonly ReturnType<typeof storableEvent>[]) {
      for (const s of stored) {
        const k = key(s.event.org_id, s.event.project_id);
        events.set(k, [...(events.get(k) ?? []), s.event]);
      }
    },
  } as unknown as EventStore;
  return {
    store,
    reads,
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

describe('first page cache', () => {
  let clock: number;
  const setup = (maxAgeMs: number) => {
    clock = 1_000_000;
    const memory = memoryStore();
    const firstPages = createFirstPageCache<FeedSlice>({ maxAgeMs, now: () => clock });
    const stored = createStoredBatches();
    dropPagesOnWrites(stored, firstPages);
    const store = stored.observe(memory.store);
    const feed = createFeedService({ store, cursors, firstPages });
    const write = (orgId: string, projectId: string) => store.insertEvents([storableEvent(canonicalEvent({ org_id: orgId, project_id: projectId }))]);
    // A write behind the process's back: another gateway's ingestion.
    const elsewhere = (orgId: string, projectId: string) => memory.store.insertEvents([storableEvent(canonicalEvent({ org_id: orgId, project_id: projectId }))]);
    return { memory, firstPages, feed, write, elsewhere };
  };

  it('serves a first page again without a store read until it is maxAgeMs old, counted from the read, then reads again', async () => {
    const { memory, feed, write, elsewhere } = setup(1000);
    const [org, project] = [uuid(), uuid()];
    await write(org, project);
    const first = await feed.listEvents(page(org, project));
    await elsewhere(org, project);
    clock += 999;
    expect(await feed.listEvents(page(org, project)), 'within the age: the page as read, without the other process\'s event').to.deep.equal(first);
    expect(memory.reads).to.have.length(1);
    clock += 1;
    const later = await feed.listEvents(page(org, project));
    expect(memory.reads, 'at the age: read again').to.have.length(2);
    expect(ids(later)).to.have.length(2);
  });

  it("drops a project's pages when this process writes to it, and only that project's", async () => {
    const { memory, feed, write } = setup(60_000);
    const [org, project, other] = [uuid(), uuid(), uuid()];
    await write(org, project);
    await write(org, other);
    await feed.listEvents(page(org, project));
    await feed.listEvents(page(org, other));
    await write(org, project);
    expect(ids(await feed.listEvents(page(org, project))), 'the new event, at once').to.have.length(2);
    await feed.listEvents(page(org, other));
    expect(memory.reads.map((q) => q.projectId)).to.deep.equal([project, other, project]);
  });

  it("drops, for one write of many events, each of its projects' pages once, a project id in two organizations being two projects", async () => {
    const stored = createStoredBatches();
    const dropped: string[] = [];
    dropPagesOnWrites(stored, { invalidate: ({ orgId, projectId }) => dropped.push(`${orgId}/${projectId}`) });
    const [orgA, orgB, project, other] = [uuid(), uuid(), uuid(), uuid()];
    const store = stored.observe({ insertEvents: async () => undefined } as unknown as EventStore);
    const events = [
      [orgA, project],
      [orgA, project],
      [orgB, project],
      [orgA, other],
      [orgA, project],
      [orgB, project],
    ].map(([org_id, project_id]) => storableEvent(canonicalEvent({ org_id: org_id!, project_id: project_id! })));
    await store.insertEvents(events);
    expect(dropped).to.deep.equal([`${orgA}/${project}`, `${orgB}/${project}`, `${orgA}/${other}`]);
  });

  it("drops a project's pages when this process writes events that spell its ids in upper case", async () => {
    const { memory, feed, write } = setup(60_000);
    const [org, project] = [uuid(), uuid()];
    await write(org, project);
    await feed.listEvents(page(org, project));
    await write(org.toUpperCase(), project.toUpperCase());
    await feed.listEvents(page(org, project));
    expect(memory.reads, 'read again after the write').to.have.length(2);
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

  it('does not keep a read that a write of its project overtook', async () => {
    const { memory, feed, write, firstPages } = setup(60_000);
    const [org, project] = [uuid(), uuid()];
    const release = memory.hold();
    const inFlight = feed.listEvents(page(org, project));
    await write(org, project);
    release();
    expect(ids(await inFlight), 'read before the write landed').to.have.length(0);
    expect(firstPages.size).to.equal(0);
    expect(ids(await feed.listEvents(page(org, project)))).to.have.length(1);
    expect(memory.reads).to.have.length(2);
  });

  it('does not keep a read that a write overtook, when a second request joined that read after the write', async () => {
    const { memory, feed, write, firstPages } = setup(60_000);
    const [org, project] = [uuid(), uuid()];
    const release = memory.hold();
    const first = feed.listEvents(page(org, project));
    await write(org, project);
    // Asks after the write, and shares the store read the first request began before it.
    const joined = feed.listEvents(page(org, project));
    release();
    expect(ids(await first)).to.have.length(0);
    expect(ids(await joined), 'the shared read, from before the write').to.have.length(0);
    expect(memory.reads, 'one store read for both').to.have.length(1);
    expect(firstPages.size, 'nothing kept from a read the write overtook').to.equal(0);
    expect(ids(await feed.listEvents(page(org, project)))).to.have.length(1);
  });

  it('keeps pages apart by organization, project, filters and page size, and never keeps a page by cursor', async () => {
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
    await feed.listEvents(page(orgB, project, { limit: 1, cursor }));
    await feed.listEvents(page(orgB, project, { limit: 1, cursor }));
    expect(memory.reads, 'pages by cursor are read every time').to.have.length(7);
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
      let release: () => void = () => {};
      let gate: Promise<void> | undefined;
      return {
        run: async () => {
          runs += 1;
          await gate;
          return runs;
        },
        hold() {
          gate = new Promise<void>((resolve) => (release = resolve));
          return () => {
            gate = undefined;
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
