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

export interface StoredEvent {
  readonly event: CanonicalEvent;
  readonly position: FeedPosition;
}

/** The event store port. Writes are idempotent by event id as seen by readers. */
export interface EventStore {
  insertEvents(events: readonly CanonicalEvent[]): Promise<void>;
  /** Events of one project of one organization, newest first: occurred_at desc, id desc. */
  listEvents(query: FeedQuery): Promise<StoredEvent[]>;
}
