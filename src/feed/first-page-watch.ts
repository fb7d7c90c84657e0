import type { Logger } from '../observability/logger.js';
import type { EventStore } from '../store/event-store.js';
import { pause, unlessAborted } from './abortable-waits.js';
import type { FirstPageCache } from './first-page-cache.js';

/** The live tail's own settings: a first page shows an event no later than a live tail does. */
export interface FirstPageWatchSettings {
  /** Rows ingested less than this long ago may not all be visible yet (STREAM_SETTLE_MS). */
  readonly settleMs: number;
  /** Interval between the starts of two polls (STREAM_POLL_MS); a poll that takes longer than this leaves the cache blind until it ends. */
  readonly pollMs: number;
}

/**
 * A poll that finds more projects written than this drops every kept page instead of
 * naming them: each name scans the kept pages (1,000 at most), and past about as many
 * names as pages, dropping them all costs less and loses little.
 */
export const MAX_NAMED_PROJECTS = 1000;

export interface FirstPageWatch {
  /** Resolves once the loop has stopped; the cache is left blind. */
  stop(): Promise<void>;
}

/**
 * Follows the writes of every process into the store, so that the first pages kept in
 * memory (src/feed/first-page-cache.ts) are dropped when their project changes, whoever
 * wrote it (docs/decisions/feed-storage.md, "First pages"). Every `pollMs` it asks the
 * store for its horizon (its clock less `settleMs`, as the live tail does) and for the
 * projects with a row ingested since the last horizon, and drops those projects' pages.
 * The windows follow one another with no gap, so every row is seen once it is `settleMs`
 * old. The cache keeps and serves pages only while this holds: it sees from the first
 * poll, and goes blind (every page dropped, none kept) when a poll fails or takes longer
 * than `pollMs`, until a poll ends well again. A page can so be out of date by at most
 * `settleMs` + 2 × `pollMs` for a write it did not see,
 * provided that a row is visible `settleMs` after its ingested_at: the live tail's own
 * assumption (docs/decisions/live-tail.md).
 */
export function watchFirstPages(deps: {
  store: Pick<EventStore, 'tailHorizon' | 'changedProjects'>;
  cache: Pick<FirstPageCache<unknown>, 'invalidate' | 'invalidateAll' | 'see' | 'blind'>;
  settings: FirstPageWatchSettings;
  logger: Logger;
  /** Told whether the cache sees (1) or is blind (0). */
  watched?: (seeing: 0 | 1) => void;
}): FirstPageWatch {
  const { store, cache, settings, logger } = deps;
  deps.watched?.(0);
  const stopping = new AbortController();
  // The horizon the watch has followed writes up to; undefined until the first poll.
  let from: string | undefined;
  let blind = true;
  const goBlind = (why: string, error?: unknown) => {
    cache.blind();
    if (blind || stopping.signal.aborted) return;
    deps.watched?.(0);
    blind = true;
    logger.warn({ err: error, why }, 'first pages are read from the store until the watch of its writes catches up');
  };

  const poll = async () => {
    const slow = setTimeout(() => goBlind(`a poll took longer than ${settings.pollMs} ms`), settings.pollMs);
    try {
      const horizon = await store.tailHorizon(settings.settleMs);
      // Both are fixed-width store texts: text order is time order.
      if (from !== undefined && horizon > from) {
        const changed = await store.changedProjects(from, horizon, MAX_NAMED_PROJECTS);
        if (changed === undefined) cache.invalidateAll();
        else for (const project of changed) cache.invalidate(project);
      } else if (from !== undefined && horizon < from) {
        // The store's clock went back: rows written now may carry an ingested_at below
        // `from`, which no window from it would ever hold. Start again from here.
        cache.invalidateAll();
      }
      from = horizon;
    } catch (error) {
      clearTimeout(slow);
      // A poll cut short by the store's client closing at shutdown is no loss of track.
      if (!stopping.signal.aborted) goBlind('a poll failed', error);
      return;
    }
    clearTimeout(slow);
    if (stopping.signal.aborted) return;
    cache.see();
    if (!blind) return;
    blind = false;
    deps.watched?.(1);
    logger.info("first pages follow the store's writes");
  };

  const loop = (async () => {
    while (!stopping.signal.aborted) {
      const started = performance.now();
      // A stop does not wait out a poll the store is slow to answer (up to the client's request timeout).
      await unlessAborted(poll(), stopping.signal);
      await pause(Math.max(0, settings.pollMs - (performance.now() - started)), stopping.signal);
    }
    cache.blind();
    deps.watched?.(0);
  })();

  return {
    async stop() {
      stopping.abort();
      await loop;
    },
  };
}
