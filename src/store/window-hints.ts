import type { FeedQuery } from './event-store.js';
import type { WindowPlan } from './feed-windows.js';

/**
 * What the last full page of a query's scope (organization, project, filters) spanned in
 * time, so the next page of that scope starts with a first window about that wide and is
 * most often one query: a project with a page a day needs no 1 h, 8 h, 64 h probes first.
 * Only how wide the first window is depends on it, never which events a page holds (every
 * plan gives the plain query's pages), so a hint that is stale, or from another process's
 * traffic, costs at most a few probes. At most `capacity` scopes, the oldest forgotten first.
 */
export interface WindowHints {
  /** The plan for a page of this scope. */
  plan(query: FeedQuery, base: WindowPlan): WindowPlan;
  /** A full page of this scope covered `spanMs`, from its start down to its last event. */
  learn(query: FeedQuery, spanMs: number, base: WindowPlan): void;
}

/** A window a quarter wider than the last page needed: about one query while the rate holds. */
const MARGIN = 1.25;

const scopeKey = (q: FeedQuery) => JSON.stringify([q.orgId, q.projectId, q.filters.domain, q.filters.entity, q.filters.action, q.filters.deviceId, q.filters.fleetId]);

export function createWindowHints(capacity = 10_000): WindowHints {
  const widths = new Map<string, number>();
  return {
    plan(query, base) {
      const width = widths.get(scopeKey(query));
      return width === undefined ? base : { ...base, firstMs: width };
    },
    learn(query, spanMs, base) {
      const key = scopeKey(query);
      widths.delete(key);
      if (widths.size >= capacity) widths.delete(widths.keys().next().value!);
      widths.set(key, Math.min(base.widestMs, Math.max(base.firstMs, Math.ceil(spanMs * MARGIN))));
    },
  };
}
