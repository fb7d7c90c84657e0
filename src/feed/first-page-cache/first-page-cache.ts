import type { FeedSlice, StorableEvent, StoredEvent } from '../../store/event-store.js';
import type { StoredBatches } from '../stored-batches.js';
import { toEventRow } from '../../store/event-rows.js';
import { fromStoreTimestamp } from '../../store/timestamps.js';

/** The project a cached page belongs to: a write of it drops or updates the project's pages. */
export interface PageOwner {
  readonly orgId: string;
  readonly projectId: string;
}

/**
 * First pages of the feed (no cursor), kept per process, so that the dashboards polling a
 * project's newest events do not each read the store
 * (docs/decisions/feed-first-page-cache.md). What a reader may see:
 * - a page whose store read began at most `maxAgeMs` ago;
 * - never a page without this process's own last write of that project: a write told
 *   with its events (`written`, followOwnWrites) brings the project's pages and reads in
 *   flight up to date, one told without them (`invalidate`) drops the pages, and a read
 *   in flight when it lands is not kept;
 * - with `watched`, a page only while a watch of the store's writes
 *   (src/feed/first-page-cache/first-page-watch.ts) follows every process's writes: the cache keeps
 *   nothing read before the watch first `see`s, and serves nothing while it is `blind`
 *   or past what its last `see` vouched for. Writes it reports bring their projects'
 *   pages up to date (`written`), or drop them where it names only the projects. A blind spell
 *   drops no page and no read in flight: the watch's windows leave no gap (and it drops
 *   every page where its store's clock stepped back), so the poll that ends the spell
 *   reports every project written during it, and the watch `see`s again only after a
 *   poll on time, so a page served after a spell is no staler than one served while the
 *   watch keeps up.
 * Where the watch reads what was written (`written`), a page kept with a `merge` is brought
 * up to date in memory instead, and so is what a read in flight brings; its age still
 * counts from its store read, the bound on what no write shows. A page served since it
 * was kept that a write drops is read again at once, and one served in the last quarter
 * of its age is read again ahead of its expiry, so that the dashboards polling it find a
 * page in memory; a request that comes while its page is dropped waits for that read
 * instead of starting its own.
 * The key is the caller's whole query, organization and project included, so no page is
 * ever served to another tenant, project, filter set or page size. Only successful reads
 * are kept; at most `capacity` pages weighing at most `weight.atMost` together, the oldest
 * dropped first, and expired ones go as reads come.
 */
export interface FirstPageCache<T, W = never> {
  /**
   * The kept page of `key`, or `run`'s. `merge` brings a page up to date with events
   * written since its read (undefined where it cannot: the page is then dropped).
   */
  read(owner: PageOwner, key: string, run: () => Promise<T>, merge?: PageMerge<T, W>): Promise<T>;
  /**
   * What `from` makes of the kept page of `key`, where `read` would serve that page now,
   * without reading the store: the page after it, cut from it. Where `from` gives
   * something, the kept page counts as asked (a page whose next page is read from it is
   * one dashboards poll) and is read again ahead of its expiry as `read`'s is; where it
   * gives nothing, the kept page is left as it was.
   */
  cut<R>(key: string, from: (page: T) => R | undefined): R | undefined;
  /** Events of the project were written: drop its pages, and any read of it in flight. */
  invalidate(owner: PageOwner): void;
  /**
   * Whether anything of the project is held: a page, a read in flight or a read again.
   * A write of a project it does not follow changes nothing here, so a writer need not
   * build the events it would hand to `written`.
   */
  follows(owner: PageOwner): boolean;
  /**
   * These events, and no others, were written to the project in the watch's last window:
   * each page and read in flight with a merge is brought up to date; the others, and
   * expired pages, go as on `invalidate`.
   */
  written(owner: PageOwner, events: readonly W[]): void;
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

export interface FirstPageCacheOptions<T = unknown> {
  /** How long after its store read began a page may be served; 0 keeps none (FEED_FIRST_PAGE_MAX_AGE_MS). */
  readonly maxAgeMs: number;
  /** Pages held at most. */
  readonly capacity?: number;
  /** What a page weighs (its events, say), and the most all kept pages may weigh together: the oldest go first. */
  readonly weight?: { readonly of: (page: T) => number; readonly atMost: number };
  /** Whether a watch of the store's writes drives the cache (`see`, `blind`): blind until it first sees. */
  readonly watched?: boolean;
  /** Told where each page came from: a request that waited for a refresh was answered by the store. */
  readonly served?: (source: 'memory' | 'store') => void;
  /** Told of each page read again because its project was written, or ahead of its expiry. */
  readonly refreshed?: () => void;
  /** Told of each page that what was written to its project changed in memory. */
  readonly merged?: () => void;
  /** Told of each page dropped to make room (`capacity`, `weight`): past the bound, polled pages push one another out and are read again. */
  readonly evicted?: () => void;
  readonly now?: () => number;
}

/** A page brought up to date with the events written since its read; undefined where it cannot tell. */
export type PageMerge<T, W> = (page: T, written: readonly W[]) => T | undefined;

interface Entry<T, W> {
  readonly owner: string;
  readonly value: T;
  /** When its store read began: its age, which bringing it up to date does not renew. */
  readonly readAt: number;
  /** The read that fetched it, to fetch it again when its project is written. */
  readonly run: () => Promise<T>;
  /** Brings it up to date with what the watch reads was written; none keeps it only until a write. */
  readonly merge: PageMerge<T, W> | undefined;
  /** Served since it was kept: a page dashboards poll, worth reading again ahead of them. */
  asked: boolean;
}

/**
 * A store read of a page in flight (a request's or a read again): what the writes of its
 * project reported while it ran make of what it brings.
 */
interface Flight<T, W> {
  readonly owner: string;
  readonly merge: PageMerge<T, W> | undefined;
  /** The windows the watch read while it ran, in order: the read is kept brought up to date with them. */
  readonly windows: (readonly W[])[];
  /** A write that dropped the project's pages: the read is not kept. */
  dropped: boolean;
}

/** A kept page's read again, started by a write of its project or ahead of its expiry. */
interface Refresh<T, W> {
  readonly owner: string;
  readonly flight: Flight<T, W>;
  /** When it began (`now`): a request waits for it only while a page read then may be served. */
  readonly at: number;
  /** The page it brings, brought up to date with the windows reported while it ran; undefined where a window could not be merged. */
  readonly value: Promise<T | undefined>;
  /** A request waited for it: the page it brings is one dashboards poll. */
  joined: boolean;
  /** A later write of its project dropped its pages: it keeps nothing, and no request waits for it from then on. */
  overtaken: boolean;
}

/**
 * Reads again in flight at most, overtaken ones included until they settle: one batch of
 * page reads (src/store/batched-page-reads.ts). The poll that ends a blind spell may name
 * hundreds of projects; past this many, their pages are dropped as before and read when
 * asked, so that such a burst does not queue hundreds of reads before the requests' own.
 */
export const MAX_REFRESHES_IN_FLIGHT = 32;

/**
 * A page served when this share of its age has passed is read again ahead of its expiry:
 * late enough that a page polled all day costs a read every 45 s at the 60 s age, early
 * enough that the slowest page reads measured (a few seconds at 100M events) end before.
 */
export const REFRESH_AHEAD_SHARE = 0.75;

/** Ids are UUIDs, which either case spells: a write that spells them in upper case drops the pages read under lower case. */
const ownerKey = (owner: PageOwner) => JSON.stringify([owner.orgId.toLowerCase(), owner.projectId.toLowerCase()]);

export function createFirstPageCache<T, W = never>(options: FirstPageCacheOptions<T>): FirstPageCache<T, W> {
  if (!Number.isInteger(options.maxAgeMs) || options.maxAgeMs < 0) throw new Error('maxAgeMs must be a whole number of milliseconds, 0 or more');
  const capacity = options.capacity ?? 1000;
  const weigh = options.weight?.of ?? (() => 0);
  const maxWeight = options.weight?.atMost ?? Infinity;
  let weight = 0;
  // Monotonic: a step of the wall clock must not stretch a page's age.
  const now = options.now ?? (() => performance.now());
  const pages = new Map<string, Entry<T, W>>();
  // The keys of `pages` by project, so that a write looks only at its project's pages:
  // the watch and the process's own inserts name hundreds of projects a second.
  const keysOf = new Map<string, Set<string>>();
  // The store reads of pages in flight, by project.
  const flights = new Map<string, Set<Flight<T, W>>>();
  // Until when (on `now`) kept pages may be served, and whether the watch has ever seen:
  // before its first poll no window covers a write, so a read that began then may never be
  // dropped by one. `epoch` moves whenever every page is dropped, so a read that began
  // before is not kept.
  let servingUntil = options.watched === true ? -Infinity : Infinity;
  let followed = options.watched !== true;
  let epoch = 0;
  const refreshing = new Map<string, Refresh<T, W>>();
  // Reads again that have not settled, overtaken ones included: what the cap counts and close awaits.
  const settling = new Set<Promise<void>>();
  let closed = false;
  // Every change to `pages` goes through these two, so that `weight` stays their sum.
  const drop = (key: string) => {
    const entry = pages.get(key);
    if (entry === undefined) return;
    weight -= weigh(entry.value);
    pages.delete(key);
    const keys = keysOf.get(entry.owner);
    keys?.delete(key);
    if (keys?.size === 0) keysOf.delete(entry.owner);
  };
  // A page replaced stays where it was in `pages`' order.
  const put = (key: string, entry: Entry<T, W>) => {
    const was = pages.get(key);
    if (was !== undefined) weight -= weigh(was.value);
    pages.set(key, entry);
    weight += weigh(entry.value);
    let keys = keysOf.get(entry.owner);
    if (keys === undefined) keysOf.set(entry.owner, (keys = new Set()));
    keys.add(key);
  };
  // The oldest page makes way for another.
  const evict = () => {
    drop(pages.keys().next().value!);
    options.evicted?.();
  };
  const dropAll = () => {
    epoch += 1;
    pages.clear();
    keysOf.clear();
    weight = 0;
    refreshing.clear();
  };
  const keep = (key: string, entry: Entry<T, W>) => {
    drop(key);
    const heavy = weigh(entry.value);
    if (heavy > maxWeight) return;
    while (pages.size > 0 && (pages.size >= capacity || weight + heavy > maxWeight)) evict();
    put(key, entry);
  };
  const takeOff = (owner: string, merge: PageMerge<T, W> | undefined): Flight<T, W> => {
    const flight: Flight<T, W> = { owner, merge, windows: [], dropped: false };
    let held = flights.get(owner);
    if (held === undefined) flights.set(owner, (held = new Set()));
    held.add(flight);
    return flight;
  };
  /**
   * What a read that took off in `epoch` `beganIn` brought, brought up to date with the
   * windows reported while it ran (each began at a horizon the store answered before the
   * read did, so the read saw everything older), undefined where one could not be merged;
   * and whether it may be kept: not where a write dropped the project's pages, or every
   * page was dropped. Called once, in the same turn as its read ends, so that no window
   * falls between.
   */
  const land = (flight: Flight<T, W>, value: T, beganIn: number): { page: T | undefined; keep: boolean } => {
    ground(flight);
    let page: T | undefined = value;
    for (const window of flight.windows) page = page === undefined ? undefined : flight.merge?.(page, window);
    return { page, keep: page !== undefined && !flight.dropped && epoch === beganIn };
  };
  /** A read that ended, kept or not. */
  const ground = (flight: Flight<T, W>) => {
    const held = flights.get(flight.owner);
    held?.delete(flight);
    if (held?.size === 0) flights.delete(flight.owner);
  };

  // Reads a page again off the pollers' path: at once when a write of its project dropped
  // it, or ahead of its expiry. It is kept by the rules of a request's read (not if a write
  // that drops its project's pages, or a drop of every page, overtakes it; brought up to
  // date with the windows reported while it ran), and not over a page a request read
  // later. A read overtaken by a write is read again once it settles, and only if a
  // request waited for it.
  const refresh = (key: string, owner: string, run: () => Promise<T>, merge: PageMerge<T, W> | undefined) => {
    if (closed || !followed || refreshing.has(key) || settling.size >= MAX_REFRESHES_IN_FLIGHT) return;
    options.refreshed?.();
    const at = now();
    const beganIn = epoch;
    const flight = takeOff(owner, merge);
    // A read that throws before its promise is a failed read again, not a failed write.
    const value = (async () => run())().then(
      (read) => {
        const current = refreshing.get(key) === record;
        if (current) refreshing.delete(key);
        const landed = land(flight, read, beganIn);
        const held = pages.get(key);
        // A page polled when it was read again ahead of its expiry is polled still.
        if (current && landed.keep && (held === undefined || held.readAt < at)) keep(key, { owner, value: landed.page!, readAt: at, run, merge, asked: record.joined || held?.asked === true });
        return landed.page;
      },
      (error: unknown) => {
        ground(flight);
        if (refreshing.get(key) === record) refreshing.delete(key);
        throw error;
      },
    );
    const record: Refresh<T, W> = { owner, flight, at, value, joined: false, overtaken: false };
    refreshing.set(key, record);
    const settled: Promise<void> = value
      // A read again that fails keeps nothing; a request that waited for it reads the store itself.
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => {
        settling.delete(settled);
        if (record.overtaken && record.joined && !pages.has(key)) refresh(key, owner, run, merge);
      })
      // Nothing above rejects but a caller's callback (`refreshed`): never a write's failure.
      .catch(() => undefined);
    settling.add(settled);
  };

  // A write of the project. Its pages are replaced by what `update` makes of them, or
  // dropped where that is undefined; a dropped page served since its read is read again.
  // Its reads in flight gather `window` to be brought up to date with, or, with none (a
  // write the process cannot read) or no merge, are not kept.
  const write = (who: string, window: readonly W[] | undefined, update: (entry: Entry<T, W>) => T | undefined) => {
    for (const flight of flights.get(who) ?? []) {
      if (window === undefined || flight.merge === undefined) flight.dropped = true;
      else flight.windows.push(window);
    }
    for (const [key, record] of refreshing) {
      if (record.owner !== who || !record.flight.dropped) continue;
      refreshing.delete(key);
      record.overtaken = true;
    }
    const again = new Map<string, Entry<T, W>>();
    for (const key of [...(keysOf.get(who) ?? [])]) {
      const entry = pages.get(key)!;
      const value = update(entry);
      if (value === undefined) {
        drop(key);
        if (entry.asked) again.set(key, entry);
      } else if (value !== entry.value) {
        // In place: the pages stay in the order of their reads, which expiry relies on.
        put(key, { ...entry, value });
        options.merged?.();
      }
    }
    // Pages brought up to date grow: the oldest make way, as for a page kept.
    while (pages.size > 0 && weight > maxWeight) evict();
    for (const [key, entry] of again) refresh(key, who, entry.run, entry.merge);
  };

  // Pages are held in the order they were kept, near enough the order their reads began:
  // each read lets go of the expired ones at the front, so pages nobody asks for again do
  // not sit in memory until the cap pushes them out.
  const dropExpired = (at: number) => {
    for (const [key, entry] of pages) {
      if (at - entry.readAt < options.maxAgeMs) return;
      drop(key);
    }
  };

  /** The kept page of `key` if it may be served at `at`. */
  const servable = (key: string, at: number): Entry<T, W> | undefined => {
    dropExpired(at);
    const held = pages.get(key);
    return at >= servingUntil || held === undefined || at - held.readAt >= options.maxAgeMs ? undefined : held;
  };
  /** A kept page was served: it is one dashboards poll, read again off their path near its expiry, so that none of them waits for it. */
  const served = (key: string, held: Entry<T, W>, at: number) => {
    held.asked = true;
    if (at - held.readAt >= options.maxAgeMs * REFRESH_AHEAD_SHARE) refresh(key, held.owner, held.run, held.merge);
  };

  return {
    async read(owner, key, run, merge) {
      if (options.maxAgeMs === 0 || !followed) {
        options.served?.('store');
        return run();
      }
      const at = now();
      const held = servable(key, at);
      if (held !== undefined) {
        served(key, held, at);
        options.served?.('memory');
        return held.value;
      }
      const serving = at < servingUntil;
      options.served?.('store');
      // A read again began after the last write of its project this process knows of that
      // dropped its pages (a later one takes it out of `refreshing`), and is brought up to
      // date with every window reported since: as fresh as a read begun now, while the
      // watch vouches for what it missed and a page read then may still be served.
      const refreshed = serving ? refreshing.get(key) : undefined;
      if (refreshed !== undefined && at - refreshed.at < options.maxAgeMs) {
        refreshed.joined = true;
        // A failed read again, or a window it could not be brought up to date with: read below as if there had been none.
        const page = await refreshed.value.catch(() => undefined);
        if (page !== undefined) return page;
      }
      const who = ownerKey(owner);
      const beganIn = epoch;
      const flight = takeOff(who, merge);
      let value: T;
      try {
        value = await run();
      } catch (error) {
        ground(flight);
        throw error;
      }
      const landed = land(flight, value, beganIn);
      if (landed.keep) keep(key, { owner: who, value: landed.page!, readAt: at, run, merge, asked: false });
      return landed.page ?? value;
    },
    cut(key, from) {
      if (options.maxAgeMs === 0 || !followed) return undefined;
      const at = now();
      const held = servable(key, at);
      if (held === undefined) return undefined;
      const page = from(held.value);
      if (page !== undefined) served(key, held, at);
      return page;
    },
    invalidate: (owner) => write(ownerKey(owner), undefined, () => undefined),
    follows(owner) {
      // A read again is in flight too until it settles.
      const who = ownerKey(owner);
      return keysOf.has(who) || flights.has(who);
    },
    written(owner, events) {
      const at = now();
      write(ownerKey(owner), events, (entry) => (at - entry.readAt < options.maxAgeMs ? entry.merge?.(entry.value, events) : undefined));
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

/**
 * Brings the kept pages of the projects this process writes up to date whenever one of its
 * inserts succeeds, and drops them when one fails (some of its rows may be stored, and
 * which is unknown) (src/feed/stored-batches.ts): a page read after the process's own
 * insert shows its events, without waiting for the watch to see them. The watch reports
 * the same events again later; bringing a page up to date is idempotent.
 */
export function followOwnWrites(stored: Pick<StoredBatches, 'onStored'>, cache: Pick<FirstPageCache<unknown, StoredEvent>, 'invalidate' | 'written' | 'follows'>): () => void {
  return stored.onStored((_at, events, succeeded) => {
    // A write holds many events of few projects: per event only lookups, since a key built
    // per event was 6.6% of a consumer's CPU (its garbage included). An event is read
    // whole only for a project whose pages are kept.
    const byProject = new Map<string, Map<string, StorableEvent[]>>();
    for (const storable of events) {
      const { head } = storable;
      let projects = byProject.get(head.org_id);
      if (projects === undefined) byProject.set(head.org_id, (projects = new Map<string, StorableEvent[]>()));
      const held = projects.get(head.project_id);
      if (held === undefined) projects.set(head.project_id, [storable]);
      else held.push(storable);
    }
    for (const [orgId, projects] of byProject) {
      for (const [projectId, written] of projects) {
        const owner = { orgId, projectId };
        if (!succeeded) cache.invalidate(owner);
        else if (cache.follows(owner)) cache.written(owner, written.map(storedEventOf));
      }
    }
  });
}

/**
 * An event as the store reads it back (src/store/event-rows.ts): ids in lower case, every
 * optional field present, null where the event had none, and occurred_at as the store
 * renders it, so that a page brought up to date by this process's own insert is the page a
 * read would give.
 */
function storedEventOf(storable: StorableEvent): StoredEvent {
  const row = toEventRow(storable.event, storable.storedAt);
  return { event: { ...row, occurred_at: fromStoreTimestamp(row.occurred_at) }, position: { occurredAt: row.occurred_at, id: row.id } };
}

/**
 * Pages kept at most, whatever they hold: a dashboard each for ten thousand projects or
 * devices. Events bound the memory (MAX_KEPT_EVENTS); this bounds the pages a write's
 * project and an expiry sweep may have to look at.
 */
export const MAX_KEPT_PAGES = 10_000;

/**
 * Events the kept pages hold together, at most: the first pages of 1,000 project and 1,000
 * device dashboards at the default page size (50), each read two pages deep and grown by
 * merges to three (src/feed/pages/feed-service.ts), 151 events a page. At 201,000 (1,000
 * pages of the largest size read one deep) those pages pushed one another out once their
 * devices' pages filled, and every page pushed out was read again when next polled
 * (docs/decisions/dashboard-polling.md). A small telemetry event costs the heap about 440
 * bytes held, so the bound is about 130 MB of kept events.
 */
export const MAX_KEPT_EVENTS = 302_000;

/**
 * The feed's first pages this process keeps, brought up to date by its own inserts and by
 * every other process's as a watch of the store sees them (src/feed/first-page-cache/first-page-watch.ts, which
 * the runtime starts): none where it serves no feed (ROLE=consumer) or may keep none
 * (FEED_FIRST_PAGE_MAX_AGE_MS=0), since following every write for a cache nobody reads
 * cost a consumer 6.6% of its CPU.
 */
export function firstPagesOf(
  config: { readonly role: string; readonly feedFirstPageMaxAgeMs: number },
  stored: Pick<StoredBatches, 'onStored'>,
  told: Pick<FirstPageCacheOptions, 'served' | 'refreshed' | 'merged' | 'evicted'> = {},
): FirstPageCache<FeedSlice, StoredEvent> | undefined {
  if (config.role === 'consumer' || config.feedFirstPageMaxAgeMs === 0) return undefined;
  const firstPages = createFirstPageCache<FeedSlice, StoredEvent>({
    maxAgeMs: config.feedFirstPageMaxAgeMs,
    watched: true,
    capacity: MAX_KEPT_PAGES,
    weight: { of: (slice) => slice.events.length, atMost: MAX_KEPT_EVENTS },
    ...told,
  });
  followOwnWrites(stored, firstPages);
  return firstPages;
}
