import { optionalInteger, type Env } from '../settings/env.js';

export interface RetentionConfig {
  /**
   * Days of events kept, by occurred_at (EVENTS_RETENTION_DAYS); undefined (unset or 0):
   * kept for ever. Whole months go: a month's partition is dropped once its last day is
   * older than this, so up to a month more is kept (docs/decisions/retention.md).
   */
  readonly days: number | undefined;
}

/** A hundred years: past it a value is a typo, not a retention. */
const MOST_DAYS = 36_500;

/**
 * Unset keeps every event, as every earlier version did: a default that deletes would
 * erase an upgraded deployment's history on its first start, which no operator can undo.
 */
export function parseRetention(env: Env): RetentionConfig {
  const days = optionalInteger(env, 'EVENTS_RETENTION_DAYS', 0, MOST_DAYS);
  return { days: days === undefined || days === 0 ? undefined : days };
}
