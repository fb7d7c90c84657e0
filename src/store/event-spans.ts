import type { FeedQuery, StorableEvent } from './event-store.js';
import { storeTextMs } from './feed-windows.js';
import { filterConditions } from './filter-sql.js';
import type { SqlParam, SqlParams, SqlTransport } from './sql-transport.js';

/**
 * Where a scope's events lie in time: for each project and each (domain, entity, action) it
 * has written, the oldest and newest occurred_at, kept on every write of events
 * (docs/decisions/feed-event-spans.md). A few rows a project, so a
 * page that finds an empty window asks it in one read of a small table where asking the
 * events table opens every part in its reach.
 *
 * The store writes a batch's spans before its events (`spanRows`), so a reader who sees an
 * event sees a span that holds it; the view covers every other writer. The spans only ever
 * widen: min and max fold copies and replays, and nothing narrows them when events go. A
 * span is a bound, never a list: it tells a page where to stop or skip to, and the events a
 * page returns are always read from the events table.
 */
/**
 * How many events the view has seen of the scope: with the span, its mean rate, which sizes
 * a page's first window (src/store/first-read.ts). Counted by the view alone (the store's
 * own span rows leave it 0), so each insert counts once; copies and replays count again,
 * so it is a guess at a rate, never a bound. Added to tables of earlier versions by ALTER.
 */
export const EVENT_SPANS_COUNT = 'events SimpleAggregateFunction(sum, UInt64)';

export const EVENT_SPANS_COLUMNS = `org_id UUID,
    project_id UUID,
    domain LowCardinality(String),
    entity LowCardinality(String),
    action LowCardinality(String),
    oldest SimpleAggregateFunction(min, DateTime64(6, 'UTC')),
    newest SimpleAggregateFunction(max, DateTime64(6, 'UTC')),
    ${EVENT_SPANS_COUNT}`;

export const EVENT_SPANS_ORDER = 'ORDER BY (org_id, project_id, domain, entity, action)';

/** The spans of the rows of `source` (events, or events_local on a cluster) that `where` keeps, one row per scope: the view's SELECT, and the backfill's. */
export const eventSpansSelect = (source: string, where?: string): string =>
  `SELECT org_id, project_id, domain, entity, action, min(occurred_at) AS oldest, max(occurred_at) AS newest, count() AS events
  FROM ${source}${where === undefined ? '' : `\n  WHERE ${where}`}
  GROUP BY org_id, project_id, domain, entity, action`;

interface Span {
  readonly head: StorableEvent['head'];
  oldest: string;
  newest: string;
}

/** The map under `key`, made empty on first use. */
function child<V>(map: Map<string, Map<string, V>>, key: string): Map<string, V> {
  let found = map.get(key);
  if (found === undefined) map.set(key, (found = new Map<string, V>()));
  return found;
}

/**
 * The span rows of a batch of events, one per scope in it, as JSONEachRow text: what the
 * store writes before the events themselves, so that a reader who sees an event sees its
 * span. Store text compares as time does, so the strings are compared as they are.
 *
 * Scopes are found level by level (project, domain, entity, action, org), each value
 * looked up as the string the validator already made: a key joined from the five values
 * for every event was copied flat and hashed whole each time, about 1 µs an event and a
 * twentieth of the consumer's CPU (docs/decisions/feed-event-spans.md).
 */
export function spanRows(events: readonly StorableEvent[]): string[] {
  const spans: Span[] = [];
  // Project, then domain, entity, action and org.
  const byProject = new Map<string, Map<string, Map<string, Map<string, Map<string, Span>>>>>();
  for (const { head, storedAt } of events) {
    const byOrg = child(child(child(child(byProject, head.project_id), head.domain), head.entity), head.action);
    const span = byOrg.get(head.org_id);
    if (span === undefined) {
      const made = { head, oldest: storedAt, newest: storedAt };
      byOrg.set(head.org_id, made);
      spans.push(made);
    } else if (storedAt < span.oldest) span.oldest = storedAt;
    else if (storedAt > span.newest) span.newest = storedAt;
  }
  return spans.map(({ head, oldest, newest }) =>
    JSON.stringify({ org_id: head.org_id, project_id: head.project_id, domain: head.domain, entity: head.entity, action: head.action, oldest, newest }),
  );
}

/** Whether a span answers the page's filters exactly; a page with any other filter (device, fleet) reads without one. */
export const spanAnswers = (filters: FeedQuery['filters']): boolean => filters.deviceId === undefined && filters.fleetId === undefined;

/** The oldest and newest occurred_at of a scope's events, as store text. */
export interface ScopeSpan {
  readonly oldest: string;
  readonly newest: string;
}

export function scopeSpanSql(query: Pick<FeedQuery, 'orgId' | 'projectId' | 'filters'>): { sql: string; params: SqlParams } {
  const params: Record<string, SqlParam> = { org_id: query.orgId, project_id: query.projectId };
  const { domain, entity, action } = query.filters;
  // The feed's own conditions, of the filters a span is kept by.
  const where = ['org_id = {org_id:UUID}', 'project_id = {project_id:UUID}', ...filterConditions({ domain, entity, action }, params)];
  // count() tells "no rows" apart from min/max's defaults, which an empty set returns.
  // The timestamps are compared as text: pinned to the store's form, whatever the server profile says.
  const sql = `SELECT min(oldest) AS oldest, max(newest) AS newest, count() AS scopes FROM event_spans WHERE ${where.join(' AND ')} SETTINGS date_time_output_format = 'simple'`;
  return { sql, params };
}

/** The scope's span, or undefined when it has never written an event matching the filters. */
export async function scopeSpan(transport: SqlTransport, query: Pick<FeedQuery, 'orgId' | 'projectId' | 'filters'>): Promise<ScopeSpan | undefined> {
  const { sql, params } = scopeSpanSql(query);
  const [row] = await transport.query<{ oldest: string; newest: string; scopes: number | string }>(sql, params);
  if (row === undefined || Number(row.scopes) === 0) return undefined;
  return { oldest: row.oldest, newest: row.newest };
}

/**
 * What a page does with its scope's span after a window that found nothing, `lowest` being
 * that window's lower edge and `reach` the lowest edge the page may read (store text):
 * - `end`: nothing of the scope lies below `lowest` (or at or after `since`): the range ends;
 * - `reach`: the scope's newest event lies below the reach: the page stops there, as its walk would;
 * - `skip`: the next window reaches down past the scope's newest event, at `newestMs`;
 * - `walk`: the span says nothing about the time below (its newest lies above the window).
 * No span: the scope has no event, unless the page already found one (an insert whose span
 * was not yet visible), and then it walks on without it.
 */
export type SpanStep = { readonly kind: 'end' | 'reach' | 'walk' } | { readonly kind: 'skip'; readonly newestMs: number };

export function spanStep(span: ScopeSpan | undefined, found: number, lowest: string, reach: string | undefined, since: string | undefined): SpanStep {
  if (span === undefined) return { kind: found > 0 ? 'walk' : 'end' };
  if (span.oldest >= lowest || (since !== undefined && span.newest < since)) return { kind: 'end' };
  if (span.newest >= lowest) return { kind: 'walk' };
  if (reach !== undefined && span.newest < reach) return { kind: 'reach' };
  return { kind: 'skip', newestMs: storeTextMs(span.newest) };
}

/** Whether every row a page has read lies within the span: one outside it proves the span stale. */
export function spanHolds(span: ScopeSpan, rows: readonly { readonly occurred_at: string }[]): boolean {
  return rows.every((row) => row.occurred_at >= span.oldest && row.occurred_at <= span.newest);
}

/**
 * Whether the scope holds an event below `lowest` and at or after `since`, when the span
 * can tell: no event below the edge, or none at or after `since`, is a no; its newest
 * event lying between them is a yes. Otherwise (its newest lies above the edge, and
 * `since` is set) undefined: the events between may all lie below `since`.
 */
export function spanHoldsBelow(span: ScopeSpan, lowest: string, since: string | undefined): boolean | undefined {
  if (span.oldest >= lowest) return false;
  if (since === undefined) return true;
  if (span.newest < since) return false;
  return span.newest < lowest ? true : undefined;
}
