import type { Config } from '../config/config.js';
import type { FeedSlice } from '../store/event-store.js';
import type { StoredBatches } from './stored-batches.js';

/** The project a cached page belongs to: a write of it drops the project's pages. */
export interface PageOwner {
  readonly orgId: string;
  readonly projectId: string;
}

/**
 * First pages of the feed (no cursor), kept per process, so that the dashboards polling a
 * project's newest events do not each read the store (docs/decisions/feed-storage.md,
 * "First pages"). What a reader may see:
 * - a page whose store read began at most `maxAgeMs` ago;
 * - never a page read before this process's own last write of that project completed:
 *   a write drops the project's pages, and a read in flight when it lands is not kept;
 * - with `watched`, a page only while a watch of the store's writes
 *   (src/feed/first-page-watch.ts) follows every process's writes: the cache keeps
 *   nothing read before the watch first `see`s, and serves nothing while it is `blind`
 *   or past what its last `see` vouched for. Writes it reports drop their projects' pages
 *   as this process's own do. A blind spell drops no page and no read in flight: the
 *   watch's windows leave no gap (and it drops every page where its store's clock stepped
 *   back), so the poll that ends the spell drops every project written during it, and the
 *   watch `see`s again only after a poll on time, so a page served after a spell is no
 *   staler than one served while the watch keeps up.
 * A page served since it was kept is read again as soon as a write drops it, so that the
 * dashboards polling it find the new page in memory; a request that comes meanwhile waits
 * for that read instead of starting its own.
 * The key is the caller's whole query, organization and project included, so no page is
 * ever served to another tenant, project, filter set or page size. Only successful reads
 * are kept; at most `capacity` pages, the oldest dropped first, and expired ones go as reads come.
 */
export interface FirstPageCache<T> {
  read(owner: PageOwner, key: string, run: () => Promise<T>): Promise<T>;
  /** Events of the project were written: drop its pages, and any read of it in flight. */
  invalidate(owner: PageOwner): void;
  /** Every kept page may be out of date (too many projects written to name them): drop them all, and every read in flight. */
  invalidateAll(): void;
  /**
   * The watch's last poll ended well and on time: kept pages may be served for `forMs`
   * from now (the time the poll vouches for, which a late timer must not stretch), and
   * reads that begin from the first `see` on may be kept.
   */
  see(forMs: number): void;
  /** The watch is behind the store's writes: serve no kept page until it sees again. */
  blind(): void;
  /** Starts no more reads again, and resolves once those in flight have settled: before the store closes. */
  close(): Promise<void>;
  /** Pages held, for tests. */
  readonly size: number;
}

export interface FirstPageCacheOptions {
  /** How long after its store read began a page may be served; 0 keeps none (FEED_FIRST_PAGE_MAX_AGE_MS). */
  readonly maxAgeMs: number;
  /** Pages held at most. */
  readonly capacity?: number;
  /** Whether a watch of the store's writes drives the cache (`see`, `blind`): blind until it first sees. */
  readonly watched?: boolean;
  /** Told where each page came from: a request that waited for a refresh was answered by the store. */
  readonly served?: (source: 'memory' | 'store') => void;
  /** Told of each page read again because its project was written. */
  readonly refreshed?: () => void;
  readonly now?: () => number;
}

interface Entry<T> {
  readonly owner: string;
  readonly value: T;
  readonly readAt: number;
  /** The read that fetched it, to fetch it again when its project is written. */
  readonly run: () => Promise<T>;
  /** Served since it was kept: a page dashboards poll, worth reading again ahead of them. */
  asked: boolean;
}

/** A kept page's read again, started by a write of its project. */
interface Refresh<T> {
  readonly owner: string;
  readonly run: () => Promise<T>;
  /** When it began (`now`): a request waits for it only while a page read then may be served. */
  readonly at: number;
  readonly value: Promise<T>;
  /** A request waited for it: the page it brings is one dashboards poll. */
  joined: boolean;
  /** A later write of its project overtook it: it keeps nothing, and no request waits for it from then on. */
  overtaken: boolean;
}

/**
 * Reads again in flight at most, overtaken ones included until they settle: one batch of
 * page reads (src/store/batched-page-reads.ts). The poll that ends a blind spell may name
 * hundreds of projects; past this many, their pages are dropped as before and read when
 * asked, so that such a burst does not queue hundreds of reads before the requests' own.
 */
export const MAX_REFRESHES_IN_FLIGHT = 32;

/** Ids are UUIDs, which either case spells: a write that spells them in upper case drops the pages read under lower case. */
const ownerKey = (owner: PageOwner) => JSON.stringify([owner.orgId.toLowerCase(), owner.projectId.toLowerCase()]);

export function createFirstPageCache<T>(options: FirstPageCacheOptions): FirstPageCache<T> {
  if (!Number.isInteger(options.maxAgeMs) || options.maxAgeMs < 0) throw new Error('maxAgeMs must be a whole number of milliseconds, 0 or more');
  const capacity = options.capacity ?? 1000;
  // Monotonic: a step of the wall clock must not stretch a page's age.
  const now = options.now ?? (() => performance.now());
  const pages = new Map<string, Entry<T>>();
  // Each write of a project takes the next number; a read is kept only if no write of its
  // project took a number after the read began. Marks are forgotten with the pages (at
  // most as many as pages are held); a forgotten mark counts as the newest one forgotten.
  let writes = 0;
  const marks = new Map<string, number>();
  let forgotten = 0;
  const markOf = (owner: string) => marks.get(owner) ?? forgotten;
  // Until when (on `now`) kept pages may be served, and whether the watch has ever seen:
  // before its first poll no window covers a write, so a read that began then may never be
  // dropped by one. `epoch` moves whenever every page is dropped, so a read that began
  // before is not kept.
  let servingUntil = options.watched === true ? -Infinity : Infinity;
  let followed = options.watched !== true;
  let epoch = 0;
  const refreshing = new Map<string, Refresh<T>>();
  // Reads again that have not settled, overtaken ones included: what the cap counts and close awaits.
  const settling = new Set<Promise<void>>();
  let closed = false;
  const dropAll = () => {
    epoch += 1;
    pages.clear();
    refreshing.clear();
  };
  const keep = (key: string, entry: Entry<T>) => {
    pages.delete(key);
    while (pages.size >= capacity) pages.delete(pages.keys().next().value!);
    pages.set(key, entry);
  };

  // Reads a written project's page again at once, so that the dashboards polling it find it
  // in memory instead of each waiting for the store. It is kept by the rules of a request's
  // read: not if another write of its project, or a drop of every page, overtakes it, nor
  // over a page a request read later. A read overtaken by a write is read again once it
  // settles, and only if a request waited for it.
  const refresh = (key: string, owner: string, run: () => Promise<T>) => {
    if (closed || !followed || refreshing.has(key) || settling.size >= MAX_REFRESHES_IN_FLIGHT) return;
    options.refreshed?.();
    const at = now();
    const began = writes;
    const beganIn = epoch;
    // A read that throws before its promise is a failed read again, not a failed write.
    const record: Refresh<T> = { owner, run, at, value: (async () => run())(), joined: false, overtaken: false };
    refreshing.set(key, record);
    const settled: Promise<void> = record.value
      .then(
        (value) => {
          if (refreshing.get(key) !== record) return;
          refreshing.delete(key);
          const held = pages.get(key);
          if (held !== undefined && held.readAt >= at) return;
          if (epoch === beganIn && markOf(owner) <= began) keep(key, { owner, value, readAt: at, run, asked: record.joined });
        },
        // A read again that fails keeps nothing; a request that waited for it reads the store itself.
        () => {
          if (refreshing.get(key) === record) refreshing.delete(key);
        },
      )
      .finally(() => {
        settling.delete(settled);
        if (record.overtaken && record.joined && !pages.has(key)) refresh(key, owner, run);
      })
      // Nothing above rejects but a caller's callback (`refreshed`): never a write's failure.
      .catch(() => undefined);
    settling.add(settled);
  };

  // Pages are held in the order they were kept, near enough the order their reads began:
  // each read lets go of the expired ones at the front, so pages nobody asks for again do
  // not sit in memory until the cap pushes them out.
  const dropExpired = (at: number) => {
    for (const [key, entry] of pages) {
      if (at - entry.readAt < options.maxAgeMs) return;
      pages.delete(key);
    }
  };

  return {
    async read(owner, key, run) {
      if (options.maxAgeMs === 0 || !followed) {
        options.served?.('store');
        return run();
      }
      const at = now();
      dropExpired(at);
      const held = pages.get(key);
      const serving = at < servingUntil;
      if (serving && held !== undefined && at - held.readAt < options.maxAgeMs) {
        held.asked = true;
        options.served?.('memory');
        return held.value;
      }
      options.served?.('store');
      // A read again began after the last write of its project this process knows of (a
      // later one takes it out of `refreshing`): as fresh as a read begun now, while the
      // watch vouches for what it missed and a page read then may still be served.
      const refreshed = serving ? refreshing.get(key) : undefined;
      if (refreshed !== undefined && at - refreshed.at < options.maxAgeMs) {
        refreshed.joined = true;
        try {
          return await refreshed.value;
        } catch {
          // Read below as if there had been no refresh.
        }
      }
      const who = ownerKey(owner);
      const began = writes;
      const beganIn = epoch;
      const value = await run();
      if (epoch === beganIn && markOf(who) <= began) keep(key, { owner: who, value, readAt: at, run, asked: false });
      return value;
    },
    invalidate(owner) {
      const who = ownerKey(owner);
      writes += 1;
      marks.delete(who);
      marks.set(who, writes);
      while (marks.size > capacity) {
        const [oldest, mark] = marks.entries().next().value!;
        marks.delete(oldest);
        forgotten = Math.max(forgotten, mark);
      }
      for (const [key, record] of refreshing) {
        if (record.owner !== who) continue;
        refreshing.delete(key);
        record.overtaken = true;
      }
      const again = new Map<string, () => Promise<T>>();
      for (const [key, entry] of pages) {
        if (entry.owner !== who) continue;
        pages.delete(key);
        if (entry.asked) again.set(key, entry.run);
      }
      for (const [key, run] of again) refresh(key, who, run);
    },
    invalidateAll: dropAll,
    see(forMs) {
      servingUntil = now() + forMs;
      followed = true;
    },
    blind() {
      servingUntil = -Infinity;
    },
    async close() {
      closed = true;
      // A read again that settles may start its next one only before `closed`: none is started now.
      while (settling.size > 0) await Promise.allSettled([...settling]);
    },
    get size() {
      return pages.size;
    },
  };
}

/** Drops the cached pages of the projects this process writes, whenever a write ends (src/feed/stored-batches.ts). */
export function dropPagesOnWrites(stored: Pick<StoredBatches, 'onStored'>, cache: Pick<FirstPageCache<unknown>, 'invalidate'>): () => void {
  return stored.onStored((_at, events) => {
    // A write holds many events of few projects: per event only lookups, since a key built
    // per event was 6.6% of a consumer's CPU (its garbage included).
    const seen = new Map<string, Set<string>>();
    for (const { head } of events) {
      let projects = seen.get(head.org_id);
      if (projects === undefined) seen.set(head.org_id, (projects = new Set()));
      if (projects.has(head.project_id)) continue;
      projects.add(head.project_id);
      cache.invalidate({ orgId: head.org_id, projectId: head.project_id });
    }
  });
}

/**
 * The feed's first pages this process keeps, dropped on its own writes and on every
 * other process's as a watch of the store sees them (src/feed/first-page-watch.ts, which
 * the runtime starts): none where it serves no feed (ROLE=consumer) or may keep none
 * (FEED_FIRST_PAGE_MAX_AGE_MS=0), since following every write for a cache nobody reads
 * cost a consumer 6.6% of its CPU.
 */
export function firstPagesOf(
  config: Pick<Config, 'role' | 'feedFirstPageMaxAgeMs'>,
  stored: Pick<StoredBatches, 'onStored'>,
  told: Pick<FirstPageCacheOptions, 'served' | 'refreshed'> = {},
): FirstPageCache<FeedSlice> | undefined {
  if (config.role === 'consumer' || config.feedFirstPageMaxAgeMs === 0) return undefined;
  const firstPages = createFirstPageCache<FeedSlice>({ maxAgeMs: config.feedFirstPageMaxAgeMs, watched: true, ...told });
  dropPagesOnWrites(stored, firstPages);
  return firstPages;
}
