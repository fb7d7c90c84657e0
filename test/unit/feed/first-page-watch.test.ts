import { expect } from 'chai';
import type { FirstPageCache } from '../../../src/feed/first-page-cache.js';
import { MAX_NAMED_PROJECTS, watchFirstPages, type FirstPageWatch } from '../../../src/feed/first-page-watch.js';
import { createLogger } from '../../../src/observability/logger.js';
import type { EventStore, TailScope } from '../../../src/store/event-store.js';
import { uuid } from '../../support/factories.js';
import { waitFor } from '../../support/wait-for.js';

type CacheCall = { kind: 'see' } | { kind: 'blind' } | { kind: 'invalidateAll' } | { kind: 'invalidate'; project: TailScope };

/** A cache that records what the watch tells it. */
function recordingCache() {
  const calls: CacheCall[] = [];
  const cache: Pick<FirstPageCache<unknown>, 'invalidate' | 'invalidateAll' | 'see' | 'blind'> = {
    see: () => calls.push({ kind: 'see' }),
    blind: () => calls.push({ kind: 'blind' }),
    invalidateAll: () => calls.push({ kind: 'invalidateAll' }),
    invalidate: (project) => calls.push({ kind: 'invalidate', project }),
  };
  return { cache, calls, last: () => calls.at(-1)?.kind };
}

/**
 * A store whose clock moves a millisecond per horizon asked, answering each window with the
 * projects `written` holds for it; `next` decides how the next call goes.
 */
function scriptedStore() {
  let tick = 10_000;
  const windows: { from: string; before: string }[] = [];
  let pending: TailScope[] | 'too many' = [];
  let next: 'ok' | 'fails' | 'window fails' | 'hangs' = 'ok';
  let release: () => void = () => {};
  const text = (ms: number) => `2026-11-26 10:00:${String(Math.floor(ms / 1000)).padStart(2, '0')}.${String(ms % 1000).padStart(3, '0')}`;
  const store: Pick<EventStore, 'tailHorizon' | 'changedProjects'> = {
    async tailHorizon() {
      if (next === 'fails') throw new Error('the store is down');
      if (next === 'hangs') await new Promise<void>((resolve) => (release = resolve));
      tick += 1;
      return text(tick);
    },
    async changedProjects(from, before, limit) {
      expect(limit).to.equal(MAX_NAMED_PROJECTS);
      if (next === 'window fails') throw new Error('the store failed the query');
      windows.push({ from, before });
      const found = pending;
      pending = [];
      return found === 'too many' ? undefined : found;
    },
  };
  return {
    store,
    windows,
    write: (projects: TailScope[] | 'too many') => (pending = projects),
    /** The store's clock steps back by `ms`. */
    stepBack: (ms: number) => (tick -= ms),
    set next(how: 'ok' | 'fails' | 'window fails' | 'hangs') {
      next = how;
      if (how === 'ok') release();
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
  const start = (store: ReturnType<typeof scriptedStore>, cache: ReturnType<typeof recordingCache>, pollMs = 5) =>
    (watch = watchFirstPages({ store: store.store, cache: cache.cache, settings: { settleMs: 2000, pollMs }, logger: createLogger('silent') }));

  it('lets the cache keep pages once its first poll has a horizon, and asks for every window after it with no gap and no overlap', async () => {
    const store = scriptedStore();
    const cache = recordingCache();
    start(store, cache);
    await waitFor('the first poll to let the cache see', async () => (cache.calls.some((c) => c.kind === 'see') ? true : undefined));
    await waitFor('three windows asked', async () => (store.windows.length >= 3 ? true : undefined));
    expect(cache.calls.filter((c) => c.kind === 'blind'), 'never blind while polls succeed').to.deep.equal([]);
    expectContiguous(store.windows);
  });

  it('drops the pages of every project another process wrote, and all of them when too many were written to name', async () => {
    const store = scriptedStore();
    const cache = recordingCache();
    start(store, cache);
    await waitFor('the cache to see', async () => (cache.last() === 'see' ? true : undefined));
    const written = [{ orgId: uuid(), projectId: uuid() }, { orgId: uuid(), projectId: uuid() }];
    store.write(written);
    await waitFor('both projects dropped', async () => (cache.calls.filter((c) => c.kind === 'invalidate').length === 2 ? true : undefined));
    expect(cache.calls.flatMap((c) => (c.kind === 'invalidate' ? [c.project] : []))).to.deep.equal(written);
    store.write('too many');
    await waitFor('every page dropped', async () => (cache.calls.some((c) => c.kind === 'invalidateAll') ? true : undefined));
  });

  const failures = [
    { next: 'fails', what: 'polls fail (the horizon)', pollMs: 5 },
    { next: 'window fails', what: 'polls fail (the window)', pollMs: 5 },
    { next: 'hangs', what: 'a poll takes longer than the interval', pollMs: 20 },
  ] as const;
  for (const failure of failures) {
    it(`leaves the cache blind while ${failure.what}, and lets it see again, with no window skipped, once a poll ends well`, async () => {
      const store = scriptedStore();
      const cache = recordingCache();
      start(store, cache, failure.pollMs);
      await waitFor('the cache to see', async () => (cache.last() === 'see' && store.windows.length > 0 ? true : undefined));
      store.next = failure.next;
      await waitFor('the cache blind', async () => (cache.last() === 'blind' ? true : undefined));
      const asked = store.windows.length;
      store.next = 'ok';
      await waitFor('the cache to see again', async () => (cache.last() === 'see' && store.windows.length > asked + 1 ? true : undefined));
      expectContiguous(store.windows);
    });
  }

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

  it('leaves the cache blind once stopped', async () => {
    const store = scriptedStore();
    const cache = recordingCache();
    const stopped = start(store, cache);
    await waitFor('the cache to see', async () => (cache.last() === 'see' ? true : undefined));
    await stopped.stop();
    watch = undefined;
    expect(cache.last()).to.equal('blind');
  });
});
