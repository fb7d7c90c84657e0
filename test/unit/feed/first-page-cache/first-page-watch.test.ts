import { expect } from 'chai';
import type { FirstPageCache } from '../../../../src/feed/first-page-cache/first-page-cache.js';
import { MAX_NAMED_PROJECTS, MAX_WINDOW_ROWS, NAMED_POLLS_AFTER_TOO_MANY, watchFirstPages, type FirstPageWatch } from '../../../../src/feed/first-page-cache/first-page-watch.js';
import { createLogger } from '../../../../src/observability/logger.js';
import type { EventStore, StoredEvent, TailScope } from '../../../../src/store/event-store.js';
import { canonicalEvent, uuid } from '../../../support/factories.js';
import { waitFor } from '../../../support/wait-for.js';

type CacheCall =
  | { kind: 'see'; forMs: number }
  | { kind: 'blind' }
  | { kind: 'invalidateAll' }
  | { kind: 'invalidate'; project: TailScope }
  | { kind: 'written'; project: TailScope; events: readonly StoredEvent[] };

/** A cache that records what the watch tells it. */
function recordingCache() {
  const calls: CacheCall[] = [];
  const cache: Pick<FirstPageCache<unknown, StoredEvent>, 'invalidate' | 'written' | 'invalidateAll' | 'see' | 'blind'> = {
    see: (forMs) => calls.push({ kind: 'see', forMs }),
    blind: () => calls.push({ kind: 'blind' }),
    invalidateAll: () => calls.push({ kind: 'invalidateAll' }),
    invalidate: (project) => calls.push({ kind: 'invalidate', project }),
    written: (project, events) => calls.push({ kind: 'written', project, events }),
  };
  return { cache, calls, last: () => calls.at(-1)?.kind, count: (kind: CacheCall['kind']) => calls.filter((c) => c.kind === kind).length };
}

/** What a window of the scripted store holds: events it reads out, projects it can only name (too many rows to read), or too many to name. */
type Window = { events: StoredEvent[] } | { names: TailScope[] } | 'too many';

/** An event of the project as the store reads it back. */
const storedOf = (project: TailScope): StoredEvent => {
  const event = canonicalEvent({ org_id: project.orgId, project_id: project.projectId });
  return { event, position: { occurredAt: '2026-11-26 10:00:00.000000', id: event.id } };
};

/**
 * A store whose clock follows this process's (and moves at least a millisecond per horizon
 * asked), answering each window with what `write` holds for it; `next` decides how the
 * next call goes. `windows` are those asked for their events, `named` those asked for
 * their projects.
 */
function scriptedStore() {
  let offset = 10_000 - performance.now();
  let tick = 10_000;
  const windows: { from: string; before: string }[] = [];
  const named: { from: string; before: string }[] = [];
  let pending: Window = { events: [] };
  let rowsFail = false;
  let next: 'ok' | 'fails' | 'window fails' | 'hangs' = 'ok';
  let release: () => void = () => {};
  let reject: (error: Error) => void = () => {};
  let hung: () => void = () => {};
  const text = (ms: number) => new Date(Date.UTC(2026, 10, 26, 10) + ms).toISOString().slice(0, 23).replace('T', ' ');
  const store: Pick<EventStore, 'tailHorizon' | 'changedProjects' | 'writtenEvents'> = {
    async tailHorizon() {
      if (next === 'fails') throw new Error('the store is down');
      if (next === 'hangs') {
        hung();
        await new Promise<void>((resolve, fail) => ([release, reject] = [resolve, fail]));
      }
      tick = Math.max(tick + 1, Math.floor(performance.now() + offset));
      return text(tick);
    },
    async writtenEvents(from, before, limit) {
      expect(limit).to.equal(MAX_WINDOW_ROWS);
      if (next === 'window fails') throw new Error('the store failed the query');
      windows.push({ from, before });
      if (rowsFail) {
        rowsFail = false;
        throw new Error('too many bytes');
      }
      if (typeof pending === 'object' && 'events' in pending) {
        const found = pending.events;
        pending = { events: [] };
        return found;
      }
      return undefined;
    },
    async changedProjects(from, before, limit) {
      expect(limit).to.equal(MAX_NAMED_PROJECTS);
      if (next === 'window fails') throw new Error('the store failed the query');
      named.push({ from, before });
      const found = pending;
      pending = { events: [] };
      if (found === 'too many') return undefined;
      return 'names' in found ? found.names : found.events.map((e) => ({ orgId: e.event.org_id, projectId: e.event.project_id }));
    },
  };
  return {
    store,
    windows,
    named,
    /** Every window asked, for its rows or its projects, each once, in order. */
    asked: () => [...new Map([...windows, ...named].map((w) => [`${w.from}/${w.before}`, w])).values()].sort((x, y) => (x.from < y.from ? -1 : 1)),
    write: (window: Window) => (pending = window),
    /** The next read of a window's rows fails, as one of too many bytes would. */
    failRows: () => (rowsFail = true),
    /** The store's clock steps back by `ms`. */
    stepBack: (ms: number) => {
      tick -= ms;
      offset -= ms;
    },
    /** Resolves as the next poll hangs on the store, before any timer can run. */
    nextHang: () => new Promise<void>((resolve) => (hung = resolve)),
    /** 'ok' lets a hung poll go on; 'fails' makes it fail. */
    set next(how: 'ok' | 'fails' | 'window fails' | 'hangs') {
      next = how;
      if (how === 'ok') release();
      if (how === 'fails') reject(new Error('the store is down'));
    },
  };
}

/** Each window starts where the one before it ended: no gap, no overlap. */
function expectContiguous(windows: readonly { from: string; before: string }[]): void {
  for (let i = 1; i < windows.length; i += 1) expect(windows[i]!.from, `window ${i} starts where the one before it ended`).to.equal(windows[i - 1]!.before);
}

describe('first page watch', () => {
  let watch: FirstPageWatch | undefined;
  afterEach(async () => {
    await watch?.stop();
    watch = undefined;
  });
  let lostTrack = 0;
  let polls: number[] = [];
  let reached: string[] = [];
  // Polls 50 ms apart: a poll on time is one the machine does not pause for that long.
  const start = (store: ReturnType<typeof scriptedStore>, cache: ReturnType<typeof recordingCache>, pollMs = 50, settleMs = 2000) => {
    lostTrack = 0;
    polls = [];
    reached = [];
    return (watch = watchFirstPages({
      store: store.store,
      cache: cache.cache,
      settings: { settleMs, pollMs },
      logger: createLogger('silent'),
      lostTrack: () => (lostTrack += 1),
      polled: (seconds) => polls.push(seconds),
      window: (how) => reached.push(how),
    }));
  };

  it('lets the cache keep pages once its first poll has a horizon, and asks for every window after it with no gap and no overlap', async () => {
    const store = scriptedStore();
    const cache = recordingCache();
    start(store, cache);
    await waitFor('the first poll to let the cache see', async () => (cache.calls.some((c) => c.kind === 'see') ? true : undefined));
    await waitFor('three windows asked', async () => (store.windows.length >= 3 ? true : undefined));
    expect(cache.calls.filter((c) => c.kind === 'blind'), 'never blind while polls succeed').to.deep.equal([]);
    expectContiguous(store.asked());
  });

  it("hands the cache each project's events another process wrote, in one call a project", async () => {
    const store = scriptedStore();
    const cache = recordingCache();
    start(store, cache);
    await waitFor('the cache to see', async () => (cache.last() === 'see' ? true : undefined));
    const [a, b] = [{ orgId: uuid(), projectId: uuid() }, { orgId: uuid(), projectId: uuid() }];
    const events = [storedOf(a), storedOf(b), storedOf(a)];
    store.write({ events });
    await waitFor('both projects handed their events', async () => (cache.count('written') === 2 ? true : undefined));
    const written = cache.calls.flatMap((c) => (c.kind === 'written' ? [c] : []));
    expect(written.map((c) => c.project)).to.deep.equal([a, b]);
    expect(written.map((c) => c.events)).to.deep.equal([[events[0], events[2]], [events[1]]]);
    expect(cache.count('invalidate'), 'no page dropped').to.equal(0);
    expect(store.named, 'no project named').to.deep.equal([]);
  });

  it(`names the projects only, for the ${NAMED_POLLS_AFTER_TOO_MANY} windows after one with too many rows to read, then reads rows again, with no window skipped`, async () => {
    const store = scriptedStore();
    const cache = recordingCache();
    // Polls 10 ms apart, to pass the named windows quickly; one late on a loaded machine only makes the cache blind a while.
    start(store, cache, 10);
    await waitFor('a window read', async () => (store.windows.length > 0 ? true : undefined));
    const read = store.windows.length;
    store.write({ names: [{ orgId: uuid(), projectId: uuid() }] });
    await waitFor('rows read again', async () => (store.windows.length > read + 1 ? true : undefined));
    expect(store.named, 'the window too large, then the ones named only').to.have.length(NAMED_POLLS_AFTER_TOO_MANY + 1);
    expect(store.named[0], 'the window too large was asked for its rows first').to.deep.equal(store.windows[read]);
    expectContiguous([...store.windows.slice(read), ...store.named.slice(1)].sort((x, y) => (x.from < y.from ? -1 : 1)));
    expect(cache.count('invalidate'), "the named project's pages dropped").to.equal(1);
    expect(cache.count('invalidateAll'), 'no window named too many').to.equal(0);
  });

  it('names the projects of a window whose rows could not be read, in the same poll, and stays in step', async () => {
    const store = scriptedStore();
    const cache = recordingCache();
    start(store, cache);
    await waitFor('the cache to see', async () => (cache.last() === 'see' && store.windows.length > 0 ? true : undefined));
    const project = { orgId: uuid(), projectId: uuid() };
    store.write({ events: [storedOf(project)] });
    store.failRows();
    await waitFor("the project's pages dropped", async () => (cache.count('invalidate') === 1 ? true : undefined));
    expect(cache.calls.flatMap((c) => (c.kind === 'invalidate' ? [c.project] : []))).to.deep.equal([project]);
    expect(store.named[0], 'the window whose rows failed, named').to.deep.equal(store.windows.at(-1));
    expect(cache.count('blind'), 'no poll failed').to.equal(0);
  });

  it('drops the pages of every project another process wrote, named where their rows were too many to read, and all of them when too many to name', async () => {
    const store = scriptedStore();
    const cache = recordingCache();
    start(store, cache);
    await waitFor('the cache to see', async () => (cache.last() === 'see' ? true : undefined));
    const written = [{ orgId: uuid(), projectId: uuid() }, { orgId: uuid(), projectId: uuid() }];
    store.write({ names: written });
    await waitFor('both projects dropped', async () => (cache.count('invalidate') === 2 ? true : undefined));
    expect(cache.calls.flatMap((c) => (c.kind === 'invalidate' ? [c.project] : []))).to.deep.equal(written);
    expect(store.windows, 'the window of the rows, named').to.deep.include(store.named[0]);
    expect(cache.count('invalidateAll'), 'the named windows dropped no other page').to.equal(0);
    store.write('too many');
    await waitFor('every page dropped', async () => (cache.count('invalidateAll') > 0 ? true : undefined));
    expect(cache.count('written'), 'no events handed').to.equal(0);
  });

  it('tells how each window reached the pages, rows read, projects named or every page dropped, and how long each poll took', async () => {
    const store = scriptedStore();
    const cache = recordingCache();
    start(store, cache);
    await waitFor('the cache to see', async () => (cache.last() === 'see' && store.windows.length > 0 ? true : undefined));
    expect(new Set(reached), 'quiet windows are read as rows').to.deep.equal(new Set(['rows']));
    store.write({ names: [{ orgId: uuid(), projectId: uuid() }] });
    await waitFor('a window named', async () => (reached.includes('named') ? true : undefined));
    store.write('too many');
    await waitFor('a window that dropped every page', async () => (reached.includes('all') ? true : undefined));
    expect(cache.count('invalidate'), "the named window dropped its project's pages").to.equal(1);
    expect(reached.filter((how) => how === 'all').length).to.equal(cache.count('invalidateAll'));
    // Every poll reports its time, the first (which has no window yet) included.
    expect(polls.length).to.be.at.least(store.windows.length + store.named.length);
    for (const seconds of polls) expect(seconds).to.be.within(0, 10);
  });

  const failures = [
    { next: 'fails', what: 'polls fail (the horizon)' },
    { next: 'window fails', what: 'polls fail (the window)' },
    { next: 'hangs', what: 'a poll takes longer than the interval' },
  ] as const;
  for (const failure of failures) {
    it(`leaves the cache blind while ${failure.what}, and lets it see again, with no window skipped, once a poll ends well, counting each spell once`, async () => {
      const store = scriptedStore();
      const cache = recordingCache();
      start(store, cache);
      await waitFor('the cache to see', async () => (cache.last() === 'see' && store.windows.length > 0 ? true : undefined));
      const lostBefore = lostTrack;
      store.next = failure.next;
      await waitFor('the cache blind', async () => (cache.last() === 'blind' ? true : undefined));
      if (failure.next !== 'hangs') {
        // Polls go on failing while blind: the spell is still the one.
        const seen = cache.count('blind');
        await waitFor('two more failed polls', async () => (cache.count('blind') >= seen + 2 ? true : undefined));
        expect(lostTrack, 'one spell counted, however many polls it lasted').to.equal(lostBefore + 1);
      } else expect(lostTrack, 'one spell counted').to.equal(lostBefore + 1);
      const asked = store.windows.length;
      store.next = 'ok';
      await waitFor('the cache to see again', async () => (cache.last() === 'see' && store.windows.length > asked + 1 ? true : undefined));
      expectContiguous(store.asked());
      const lostAgain = lostTrack;
      store.next = failure.next;
      await waitFor('the cache blind again', async () => (cache.last() === 'blind' ? true : undefined));
      expect(lostTrack, 'a second spell counted').to.equal(lostAgain + 1);
      // Lets a hung poll end, so that none is left pending at the stop.
      store.next = 'ok';
    });
  }

  it('counts a poll that runs late and then fails as one spell', async () => {
    const store = scriptedStore();
    const cache = recordingCache();
    start(store, cache);
    await waitFor('the cache to see', async () => (cache.last() === 'see' && store.windows.length > 0 ? true : undefined));
    const lostSeeing = lostTrack;
    store.next = 'hangs';
    await waitFor('the cache blind', async () => (cache.last() === 'blind' ? true : undefined));
    const late = cache.count('blind');
    store.next = 'fails';
    await waitFor('the late poll failed and one more after it', async () => (cache.count('blind') >= late + 2 ? true : undefined));
    expect(lostTrack).to.equal(lostSeeing + 1);
  });

  it('counts no spell before the first poll ends well, and counts the first after it', async () => {
    const store = scriptedStore();
    const cache = recordingCache();
    store.next = 'fails';
    start(store, cache);
    await waitFor('three polls failed', async () => (cache.count('blind') >= 3 ? true : undefined));
    expect(lostTrack, 'a watch that never followed the store lost no track').to.equal(0);
    store.next = 'ok';
    await waitFor('the cache to see', async () => (cache.last() === 'see' ? true : undefined));
    const lostSeeing = lostTrack;
    store.next = 'fails';
    await waitFor('the cache blind', async () => (cache.last() === 'blind' ? true : undefined));
    expect(lostTrack).to.equal(lostSeeing + 1);
  });

  it('lets the cache see again only after a poll on time, not at the end of a late one, whose window ends where it began', async () => {
    const store = scriptedStore();
    const cache = recordingCache();
    // Windows asked by the time of each `see`.
    const seenAt: number[] = [];
    const see = cache.cache.see;
    cache.cache.see = (forMs) => {
      seenAt.push(store.windows.length);
      see(forMs);
    };
    start(store, cache);
    await waitFor('the cache to see', async () => (cache.last() === 'see' && store.windows.length > 0 ? true : undefined));
    const hangs = store.nextHang();
    store.next = 'hangs';
    await hangs;
    const hungAt = performance.now();
    // Released only once late by this process's clock too, which a timer may fire a fraction of a millisecond short of.
    await waitFor('the cache blind', async () => (cache.last() === 'blind' && performance.now() - hungAt > 50 ? true : undefined));
    const asked = store.windows.length;
    const seen = seenAt.length;
    store.next = 'ok';
    await waitFor('the cache to see again', async () => (seenAt.length > seen ? true : undefined));
    expect(seenAt[seen], 'the late poll asked one window and did not see; a poll after it did').to.be.at.least(asked + 2);
    expectContiguous(store.asked());
  });

  it('vouches for kept pages until the next poll, started on time, has had its interval to end, and no longer', async () => {
    const store = scriptedStore();
    const cache = recordingCache();
    start(store, cache);
    await waitFor('five polls seen', async () => (cache.count('see') >= 5 ? true : undefined));
    for (const call of cache.calls) if (call.kind === 'see') expect(call.forMs).to.be.within(50, 100);
  });

  it("drops every page when the store's clock stepped back during a blind spell, though it caught up before the spell ended", async () => {
    const store = scriptedStore();
    const cache = recordingCache();
    // Rows count as seen 20 ms after they are written, polls 50 ms apart.
    start(store, cache, 50, 20);
    await waitFor('the cache to see', async () => (cache.last() === 'see' && store.windows.length > 0 ? true : undefined));
    store.next = 'fails';
    await waitFor('the cache blind', async () => (cache.last() === 'blind' ? true : undefined));
    const dropsBefore = cache.count('invalidateAll');
    // A step of 60 ms, well over the 20 rows take to count as seen: rows written just
    // after it carry an ingested_at below the last horizon, in no window from it.
    store.stepBack(60);
    const steppedAt = performance.now();
    // Blind long enough for the store's clock to pass the horizon before the step again.
    await waitFor('the store past its old horizon', async () => (performance.now() - steppedAt > 150 ? true : undefined));
    store.next = 'ok';
    await waitFor('the cache to see again', async () => (cache.last() === 'see' ? true : undefined));
    expect(cache.count('invalidateAll'), 'every page dropped').to.be.greaterThan(dropsBefore);
  });

  it("drops every page when the store's clock steps back, and follows from the new horizon", async () => {
    const store = scriptedStore();
    const cache = recordingCache();
    start(store, cache);
    await waitFor('two windows asked', async () => (store.windows.length >= 2 ? true : undefined));
    // Polls resolve within one turn of the event loop here: none is half done at the step.
    const asked = store.windows.length;
    store.stepBack(500);
    await waitFor('every page dropped', async () => (cache.calls.some((c) => c.kind === 'invalidateAll') ? true : undefined));
    await waitFor('windows asked again', async () => (store.windows.length >= asked + 2 ? true : undefined));
    const after = store.windows.slice(asked);
    expect(after[0]!.from < store.windows[asked - 1]!.before, 'the first window after the step starts below the last one before it').to.equal(true);
    expectContiguous(after);
  });

  it('leaves the cache blind once stopped, with no track counted as lost', async () => {
    const store = scriptedStore();
    const cache = recordingCache();
    const stopped = start(store, cache);
    await waitFor('the cache to see', async () => (cache.last() === 'see' ? true : undefined));
    const lostSeeing = lostTrack;
    await stopped.stop();
    watch = undefined;
    expect(cache.last()).to.equal('blind');
    expect(lostTrack, 'a stop is no track lost').to.equal(lostSeeing);
  });

  it('counts no spell when stopped while a poll hangs past its interval', async () => {
    const store = scriptedStore();
    const cache = recordingCache();
    const stopped = start(store, cache);
    await waitFor('the cache to see', async () => (cache.last() === 'see' && store.windows.length > 0 ? true : undefined));
    const hangs = store.nextHang();
    store.next = 'hangs';
    await hangs;
    const lostAtStop = lostTrack;
    // Stopped within the same turn of the event loop, so the hung poll's interval runs out after the stop.
    await stopped.stop();
    watch = undefined;
    const atStop = cache.count('blind');
    await waitFor("the hung poll's interval to run out", async () => (cache.count('blind') > atStop ? true : undefined));
    expect(lostTrack).to.equal(lostAtStop);
    store.next = 'ok';
  });
});
