import type { Logger } from '../../observability/logger.js';
import type { EventStore, StoredEvent } from '../../store/event-store.js';
import { pause, unlessAborted } from '../abortable-waits.js';
import type { FirstPageCache, PageOwner } from './first-page-cache.js';
import { projectKey } from '../tail/tail-matching.js';

/** The live tail's own settings: a first page shows an event no later than a live tail does. */
export interface FirstPageWatchSettings {
  /** Rows ingested less than this long ago may not all be visible yet (STREAM_SETTLE_MS). */
  readonly settleMs: number;
  /** Interval between the starts of two polls (STREAM_POLL_MS); a poll that takes longer than this leaves the cache blind until a poll ends on time. */
  readonly pollMs: number;
}

/**
 * A poll that finds more projects written than this drops every kept page instead of
 * naming them: each name scans the kept pages (1,000 at most), and past about as many
 * names as pages, dropping them all costs less and loses little.
 */
export const MAX_NAMED_PROJECTS = 1000;

/**
 * A poll reads the rows of its window (copies and every project's included), to bring
 * kept pages up to date, only up to this many; past it (a busy ingest) it names the
 * projects and drops their pages. Ingest writes in batches, so a window of a steady rate
 * holds a whole insert or none: at 1,000 events a second, windows of 1,000 rows came too
 * large more often than not, and the pages of every project written were dropped and read
 * again, which cost a server more than reading rows (docs/decisions/dashboard-polling.md).
 * Ten thousand rows a window are 20,000 events a second at the default poll, a few
 * megabytes for the gateway to parse.
 */
export const MAX_WINDOW_ROWS = 10_000;

/**
 * After a window too large to read (or holding a row it could not read, or whose read
 * failed), the next this many are only named: a store that busy would otherwise read
 * 1,001 rows each poll only to throw them away.
 */
export const NAMED_POLLS_AFTER_TOO_MANY = 10;

/** A horizon's milliseconds: 'YYYY-MM-DD hh:mm:ss.fff', UTC. Any other text fails the poll, so that no check is skipped. */
function msOf(horizon: string): number {
  const ms = Date.parse(`${horizon.replace(' ', 'T')}Z`);
  if (Number.isNaN(ms)) throw new Error(`the store's clock read "${horizon}", not a UTC time`);
  return ms;
}

/** The events of a window, by the project they were written to, as the store spells it (lower case). */
function byProject(events: readonly StoredEvent[]): [PageOwner, StoredEvent[]][] {
  const projects = new Map<string, [PageOwner, StoredEvent[]]>();
  for (const stored of events) {
    const owner = { orgId: stored.event.org_id, projectId: stored.event.project_id };
    const key = projectKey(owner.orgId, owner.projectId);
    const held = projects.get(key);
    if (held === undefined) projects.set(key, [owner, [stored]]);
    else held[1].push(stored);
  }
  return [...projects.values()];
}

export interface FirstPageWatch {
  /** Resolves once the loop has stopped; the cache is left blind. */
  stop(): Promise<void>;
}

/**
 * Follows the writes of every process into the store, so that the first pages kept in
 * memory (src/feed/first-page-cache/first-page-cache.ts) are brought up to date or dropped when their
 * project changes, whoever wrote it (docs/decisions/feed-first-page-cache.md).
 * Every `pollMs` it asks the store for its horizon (its clock less `settleMs`, as the
 * live tail does) and for the rows ingested since the last horizon, and hands each
 * project's to the cache, which brings its pages up to date with them; past
 * MAX_WINDOW_ROWS rows it asks only which projects they were, and the cache drops their
 * pages.
 * The windows follow one another with no gap, so every row is seen once it is `settleMs`
 * old. The cache serves pages only while this keeps up: it sees from the end of the first
 * poll on time, each such poll vouching for the pages until 2 × `pollMs` after it began,
 * and goes blind (no page served) when a poll fails or takes longer than `pollMs`, until
 * a poll ends well and on time. A late poll's window ends at the horizon the store
 * answered, long before the poll ended, so serving at its end could miss the writes made
 * since. A page can so be out of date by at most `settleMs` + 2 × `pollMs` for a write it
 * did not see,
 * provided that a row is visible `settleMs` after its ingested_at: the live tail's own
 * assumption (docs/decisions/live-tail-settle-window.md).
 */
export function watchFirstPages(deps: {
  store: Pick<EventStore, 'tailHorizon' | 'changedProjects' | 'writtenEvents'>;
  cache: Pick<FirstPageCache<unknown, StoredEvent>, 'invalidate' | 'written' | 'invalidateAll' | 'see' | 'blind'>;
  settings: FirstPageWatchSettings;
  logger: Logger;
  /** Told whether the cache sees (1) or is blind (0). */
  watched?: (seeing: 0 | 1) => void;
  /**
   * Told each time the watch stops following the store (not before its first good poll,
   * nor at stop). A spell serves no kept page until a poll ends well and on time, so the
   * count explains pages read from the store though asked within the cache's age, and
   * shows spells too short for `watched`'s gauge to be scraped at.
   */
  lostTrack?: () => void;
  /** Told how long each poll took, a failed one included: what says why the watch goes blind on a busy store. */
  polled?: (seconds: number) => void;
  /**
   * Told how each window of writes reached the pages: its rows read (`rows`, pages brought
   * up to date), its projects named (`named`, their pages dropped: too many rows, or a row
   * it could not read), or every page dropped (`all`: too many projects, or the store's
   * clock stepped back).
   */
  window?: (reached: 'rows' | 'named' | 'all') => void;
}): FirstPageWatch {
  const { store, cache, settings, logger } = deps;
  deps.watched?.(0);
  const stopping = new AbortController();
  // The horizon the watch has followed writes up to, undefined until the first poll, and
  // when (this process's monotonic clock) the store answered it.
  let from: string | undefined;
  let fromAnsweredAt = 0;
  let blind = true;
  // Polls left that name the projects of their window without reading its rows.
  let namedOnly = 0;
  const goBlind = (why: string, error?: unknown) => {
    cache.blind();
    if (blind || stopping.signal.aborted) return;
    deps.watched?.(0);
    deps.lostTrack?.();
    blind = true;
    logger.warn({ err: error, why }, 'first pages are read from the store until the watch of its writes catches up');
  };

  const dropAll = () => {
    cache.invalidateAll();
    deps.window?.('all');
  };

  /** Brings the kept pages up to date with the window's rows, or drops those of the projects it names. */
  const report = async (from: string, before: string) => {
    const rows = namedOnly > 0 ? undefined : await store.writtenEvents(from, before, MAX_WINDOW_ROWS).catch((error: unknown) => {
      // The rows may fail where the names would not (too many bytes, a timeout): name them.
      if (!stopping.signal.aborted) logger.warn({ err: error }, "the rows of the store's last writes could not be read; their projects' first pages are dropped instead");
      return undefined;
    });
    if (rows !== undefined) {
      for (const [project, events] of byProject(rows)) cache.written(project, events);
      deps.window?.('rows');
      return;
    }
    namedOnly = namedOnly > 0 ? namedOnly - 1 : NAMED_POLLS_AFTER_TOO_MANY;
    const changed = await store.changedProjects(from, before, MAX_NAMED_PROJECTS);
    if (changed === undefined) dropAll();
    else {
      for (const project of changed) cache.invalidate(project);
      deps.window?.('named');
    }
  };

  /** Reads the store's horizon and hands the window since the last one to the cache. */
  const follow = async (started: number) => {
    const horizon = await store.tailHorizon(settings.settleMs);
    const answeredAt = performance.now();
    // Both are fixed-width store texts: text order is time order.
    if (from !== undefined && horizon > from) {
      // The store's clock moved less than ours since it answered `from`, which it cannot
      // without stepping back: a step of more than `settleMs`, caught up since (over a
      // blind spell, say), gave rows written meanwhile an ingested_at below `from`, which
      // no window from it holds.
      const steppedBack = msOf(horizon) - msOf(from) < started - fromAnsweredAt - settings.settleMs;
      if (steppedBack) dropAll();
      else await report(from, horizon);
    } else if (from !== undefined && horizon < from) {
      // The store's clock went back: rows written now may carry an ingested_at below
      // `from`, which no window from it would ever hold. Start again from here.
      dropAll();
    }
    from = horizon;
    fromAnsweredAt = answeredAt;
  };

  const poll = async () => {
    const started = performance.now();
    const slow = setTimeout(() => goBlind(`a poll took longer than ${settings.pollMs} ms`), settings.pollMs);
    try {
      await follow(started);
    } catch (error) {
      clearTimeout(slow);
      deps.polled?.((performance.now() - started) / 1000);
      // A poll cut short by the store's client closing at shutdown is no loss of track.
      if (!stopping.signal.aborted) goBlind('a poll failed', error);
      return;
    }
    clearTimeout(slow);
    deps.polled?.((performance.now() - started) / 1000);
    if (stopping.signal.aborted) return;
    // A busy event loop can run the store's answer before an overdue timer: the clock decides.
    if (performance.now() - started > settings.pollMs) {
      goBlind(`a poll took longer than ${settings.pollMs} ms`);
      return;
    }
    // The poll's window covers every write visible by its start: pages may be served until
    // the next poll, started on time, has had its interval to end.
    cache.see(started + 2 * settings.pollMs - performance.now());
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
