import type { CanonicalEvent } from '../generated/schema-types.js';

export interface FeedFilters {
  readonly domain?: string | undefined;
  readonly entity?: string | undefined;
  readonly action?: string | undefined;
  readonly deviceId?: string | undefined;
  readonly fleetId?: string | undefined;
  /** occurred_at at or after this, in the store's timestamp text. */
  readonly since?: string | undefined;
  /** occurred_at before this, in the store's timestamp text. */
  readonly until?: string | undefined;
}

/** A place in the feed's order: the store's own occurred_at text and the event id. */
export interface FeedPosition {
  readonly occurredAt: string;
  readonly id: string;
}

export interface FeedQuery {
  readonly orgId: string;
  readonly projectId: string;
  readonly filters: FeedFilters;
  /** Return only events strictly after this position in feed order (newest first). */
  readonly after: FeedPosition | undefined;
  readonly limit: number;
}

/**
 * What one page read found. `events` holds up to `limit` events; fewer, either because
 * the range ends, or because the read stopped at its bound on work
 * (docs/decisions/feed-time-windows.md): then `resumeAfter` is the position below
 * everything it looked at, and the range may go on after it.
 */
export interface FeedSlice {
  readonly events: StoredEvent[];
  readonly resumeAfter?: FeedPosition | undefined;
}

export interface StoredEvent {
  readonly event: CanonicalEvent;
  readonly position: FeedPosition;
}

/** What an event is known by before it is read whole: its identity, its timestamp as it arrived, and the scope its span is kept for (src/store/event-spans.ts). */
export type EventHead = Pick<CanonicalEvent, 'id' | 'org_id' | 'project_id' | 'occurred_at' | 'domain' | 'entity' | 'action'>;

/**
 * An event checked against its schema, as validation hands it to the store: occurred_at
 * is already the store's text (converted once, while validating), and `json` is the
 * event's own UTF-8 JSON text where it may be written as it is instead of encoding the
 * event again (src/store/event-row-text.ts).
 */
export interface StorableEvent {
  /** The whole event. An event checked as bytes (src/schemas/byte-validator.ts) is read from `json` only when this is asked for. */
  readonly event: CanonicalEvent;
  readonly head: EventHead;
  /** occurred_at as the store keeps it: 'YYYY-MM-DD hh:mm:ss.ffffff', UTC. */
  readonly storedAt: string;
  /**
   * The event's own JSON text, set only where the byte reader (src/ingest/canonical-event-bytes.ts)
   * proved while reading it that it stores as the row: src/store/event-row-text.ts writes it as it is.
   */
  readonly json?: Buffer | undefined;
}

/** The event store port. Writes are idempotent by event id as seen by readers. */
export interface EventStore {
  insertEvents(events: readonly StorableEvent[]): Promise<void>;
  /**
   * A known-good write on the inserts' own path: resolves when the store takes it. An insert
   * that failed in a way no list names is the rows' fault only if the store takes this.
   */
  probeWrite(): Promise<void>;
  /** Events of one project of one organization, newest first: occurred_at desc, id desc. */
  listEvents(query: FeedQuery): Promise<FeedSlice>;
  /** The store's own clock less `settleMs`, as ingested_at text: the live tail reads only rows ingested before it. */
  tailHorizon(settleMs: number): Promise<string>;
  /** The next rows of a live tail, in ingestion order: ingested_at asc, id asc. */
  tailEvents(query: TailQuery): Promise<TailBatch>;
  /**
   * The next rows of several projects at once, unfiltered, in one ingestion order: the
   * live tail's shared read, which fans them out to each stream in memory.
   */
  tailProjects(query: SharedTailQuery): Promise<TailBatch>;
  /**
   * The projects with a row ingested at or after `from` and before `before` (horizons of
   * `tailHorizon`), at most `limit` of them; undefined when there are more. How a process
   * learns of the writes of every other (src/feed/first-page-cache/first-page-watch.ts).
   */
  changedProjects(from: string, before: string, limit: number): Promise<TailScope[] | undefined>;
  /**
   * The events of the rows ingested in the same window, copies included, in no order, at
   * most `limit` of them; undefined when there are more, or one it cannot read. What lets
   * a process bring the first pages it keeps up to date without reading them again
   * (src/feed/first-page-cache/first-page-merge.ts).
   */
  writtenEvents(from: string, before: string, limit: number): Promise<StoredEvent[] | undefined>;
}

/** The filters of the live tail: the feed's, without its occurred_at bounds. */
export type TailFilters = Pick<FeedFilters, 'domain' | 'entity' | 'action' | 'deviceId' | 'fleetId'>;

/** A place in ingestion order: ingested_at as the store's DateTime64(3) text ('YYYY-MM-DD hh:mm:ss.fff', UTC) and the event id. */
export interface TailPosition {
  readonly ingestedAt: string;
  readonly id: string;
}

export interface TailQuery {
  readonly orgId: string;
  readonly projectId: string;
  readonly filters: TailFilters;
  /** Only rows strictly after this position in ingestion order. */
  readonly after: TailPosition;
  /** Only rows ingested before this instant (the horizon, store text): later ones may not all be visible yet. */
  readonly before: string;
  readonly limit: number;
}

/** One tailed project of one organization. */
export interface TailScope {
  readonly orgId: string;
  readonly projectId: string;
}

/** Like TailQuery, over several projects and with no filters. */
export interface SharedTailQuery {
  readonly scopes: readonly TailScope[];
  readonly after: TailPosition;
  readonly before: string;
  readonly limit: number;
}

export interface TailedEvent {
  readonly event: CanonicalEvent;
  readonly position: TailPosition;
}

export interface TailBatch {
  /** In ingestion order, each id once, and none whose earlier copy lies at or before `after`. */
  readonly events: TailedEvent[];
  /**
   * Where the next poll starts. When the window held `limit` rows, the last of them;
   * otherwise everything below `before` was read, and it is `before` itself (or `after`
   * when that is later), so the next poll does not read the same rows again.
   */
  readonly next: TailPosition;
  /** Whether the window held `limit` rows, so more may be waiting below `before`. */
  readonly full: boolean;
}
