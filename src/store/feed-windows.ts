import type { FeedQuery } from './event-store.js';

/**
 * A slice of occurred_at, `[from, to)` in the store's timestamp text; an absent end is
 * unbounded on that side (the query's own bounds, cursor, `since` and `until`, still hold).
 */
export interface FeedWindow {
  readonly from?: string;
  readonly to?: string;
}

/**
 * How a page walks back through time (docs/decisions/feed-time-windows.md).
 * - `firstMs`: the first window's width, below the newest point the page can start at.
 * - `growth`: each next window is this many times wider than the one before it…
 * - `widestMs`: …up to this width, about one monthly partition, so no window of the plan
 *   spans more than two partitions (a paced one may: `WindowWalk.paceFor`).
 * - `probes`: the most windows one page reads. A page not full after them ends there, and
 *   says where to go on.
 */
export interface WindowPlan {
  readonly firstMs: number;
  readonly growth: number;
  readonly widestMs: number;
  readonly probes: number;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/**
 * One hour, then ×8 up to 31 days, at most 20 windows: 1 h, 8 h, 64 h, 21 days, then 31
 * days at a time, about 1.4 years behind the page's start in all.
 */
export const WINDOW_PLAN: WindowPlan = { firstMs: HOUR, growth: 8, widestMs: 31 * DAY, probes: 20 };

/** DateTime64's earliest year: a window reaching below it has no lower bound. */
const EARLIEST_MS = Date.UTC(1900, 0, 1);

/** Milliseconds since the epoch of store text 'YYYY-MM-DD hh:mm:ss.ffffff' (the microseconds below a millisecond are cut). */
export function storeTextMs(text: string): number {
  return Date.parse(`${text.slice(0, 10)}T${text.slice(11, 23)}Z`);
}

/** Store text of a whole millisecond. */
export function msStoreText(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 23)}000`;
}

/** The newest instant a page can hold events below (the first window's lower edge is counted from it): the cursor, `until` or now, the earliest. */
export function windowsStart(query: Pick<FeedQuery, 'after' | 'filters'>, nowMs: number): number {
  const tops = [nowMs];
  if (query.after !== undefined) tops.push(storeTextMs(query.after.occurredAt));
  if (query.filters.until !== undefined) tops.push(storeTextMs(query.filters.until));
  return Math.min(...tops);
}

/**
 * The windows a page reads, newest first: each one's `from` is the next one's `to`, so
 * together they cover the query's range with no gap and no overlap, and every event at
 * one instant falls in exactly one window. The first has no upper end (the cursor or
 * `until` bounds it); they start below the newest point the page can hold: the cursor,
 * `until` or now, whichever is earliest. The last window reaches `since` (or has no lower
 * end) when the plan's probes get there; otherwise the range goes on below it.
 */
export function feedWindows(query: Pick<FeedQuery, 'after' | 'filters'>, nowMs: number, plan: WindowPlan = WINDOW_PLAN): FeedWindow[] {
  // The plan's windows are a walk that never skips.
  const walk = windowWalk(query, nowMs, plan);
  const windows: FeedWindow[] = [];
  for (let window = walk.next(); window !== undefined; window = walk.next()) windows.push(window);
  return windows;
}

/** How many times over a paced window is sized to hold what the page still needs: rates vary. */
const PACE_MARGIN = 2;

const sinceMsOf = (query: Pick<FeedQuery, 'filters'>): number =>
  query.filters.since === undefined ? EARLIEST_MS : Math.max(EARLIEST_MS, storeTextMs(query.filters.since));

/** The lowest edge of the plan's windows when its probes run out above `since`; undefined when they reach it. */
function planReach(query: Pick<FeedQuery, 'after' | 'filters'>, nowMs: number, plan: WindowPlan): string | undefined {
  const sinceMs = sinceMsOf(query);
  let topMs = windowsStart(query, nowMs);
  let width = plan.firstMs;
  for (let probe = 0; probe < plan.probes; probe += 1) {
    if (topMs - width <= sinceMs) return undefined;
    topMs -= width;
    width = Math.min(plan.widestMs, width * plan.growth);
  }
  return msStoreText(topMs);
}

/**
 * The windows of one page, handed out one at a time, so that the page can move the next
 * window's top down past a stretch it has found empty (`skipTo`). Every window still
 * begins where the one before it ended, so the windows cover the range with no gap and
 * no overlap; none reaches below `reach`, the lowest edge of the plan's own windows
 * (`feedWindows`), so a page never looks further back than the plan would have. A skip
 * counts against the plan's probes like a window: a page makes at most `probes` queries
 * of windows and skips together. Pacing (`paceFor`) only widens the next window.
 */
export interface WindowWalk {
  /** The next window, or undefined once the probes are spent or the reach is read. */
  next(): FeedWindow | undefined;
  /** The newest matching event below the last window lies at `newestMs`: the next window reaches from that window's lower edge down past it, as wide as the next one would have been. */
  skipTo(newestMs: number): void;
  /**
   * The page holds `foundSoFar` events from all its windows and still needs `needed`: the
   * next window is made wide enough to hold them twice over at the rate of the time the
   * windows read (a skipped stretch, known empty, is not counted), if that is wider than
   * the plan's next one; it may then be wider than `widestMs`.
   */
  paceFor(foundSoFar: number, needed: number): void;
  /** Whether a skip may follow the last window: the next would be the widest, and a probe is left for the skip and the window after it. */
  readonly canSkip: boolean;
  /** The lowest edge any window of this page may have; undefined when the plan reaches `since`, or 1900. */
  readonly reach: string | undefined;
}

/**
 * Where a walk goes on after a page's first read (src/store/first-read.ts), which read the
 * window from `edge` up to `topMs` (the scope's newest event, or the page's top when lower)
 * as the walk's first: the next window ends at that edge, is wider than that one by the
 * plan's growth, and that window's time, not the stretch above it, counts in the rate.
 */
export interface WalkStart {
  readonly edge: string;
  readonly topMs: number;
}

export function windowWalk(query: Pick<FeedQuery, 'after' | 'filters'>, nowMs: number, plan: WindowPlan = WINDOW_PLAN, start?: WalkStart): WindowWalk {
  const reach = planReach(query, nowMs, plan);
  const floorMs = reach === undefined ? sinceMsOf(query) : storeTextMs(reach);
  let to: string | undefined;
  let topMs = windowsStart(query, nowMs);
  let width = plan.firstMs;
  /** Milliseconds of time the windows handed out have covered, the stretches skipped over left out. */
  let readMs = 0;
  let used = 0;
  if (start !== undefined) {
    const edgeMs = storeTextMs(start.edge);
    readMs = Math.max(0, Math.min(topMs, start.topMs) - edgeMs);
    width = Math.min(plan.widestMs, Math.max(plan.firstMs, readMs) * plan.growth);
    // The edge as the first read had it, to the microsecond: the next window ends exactly there.
    to = start.edge;
    topMs = edgeMs;
    used = 1;
  }
  let done = false;
  return {
    next() {
      if (done || used >= plan.probes) return undefined;
      used += 1;
      const fromMs = topMs - width;
      if (fromMs <= floorMs) {
        done = true;
        readMs += topMs - floorMs;
        // The last window: down to the reach, or to `since` (whose own condition bounds the query).
        return { ...(reach === undefined ? {} : { from: reach }), ...(to === undefined ? {} : { to }) };
      }
      const from = msStoreText(fromMs);
      const window: FeedWindow = to === undefined ? { from } : { from, to };
      to = from;
      readMs += topMs - fromMs;
      topMs = fromMs;
      width = Math.min(plan.widestMs, width * plan.growth);
      return window;
    },
    skipTo(newestMs) {
      used += 1;
      // The millisecond after the event's own (store text is cut to milliseconds), so the window holds it.
      topMs = Math.min(topMs, Math.floor(newestMs) + 1);
    },
    paceFor(foundSoFar, needed) {
      if (foundSoFar <= 0 || needed <= 0 || readMs <= 0) return;
      // A sparse scope (a device, a rare action) finds a few events a window: at the widest
      // width alone its page took up to the whole plan of probes, each a query's fixed cost.
      // A skipped stretch is left out of the rate: counted, a year-idle project's first
      // events would pace the next window down to the reach.
      width = Math.max(width, Math.ceil((readMs / foundSoFar) * needed * PACE_MARGIN));
    },
    get canSkip() {
      // Only once the widening has reached its widest: the narrow windows near the top stay
      // in the newest partition, where a skip over the whole reach would open a granule of
      // every part down to it, the plain query's cost again, to save a window or two. A
      // paced page gets there sooner: its windows are already as wide as its rate asks.
      return !done && width >= plan.widestMs && plan.probes - used >= 2;
    },
    reach,
  };
}
