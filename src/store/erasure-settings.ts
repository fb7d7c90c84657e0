import { integer, type Env } from '../settings/env.js';

export interface ErasureConfig {
  /**
   * How often every gateway process reads the erasures table (ERASURE_POLL_MS): the
   * longest a new erasure's suppression waits before a process applies it. The erase
   * command waits twice this before it deletes and before it reports done
   * (docs/decisions/erasure.md).
   */
  readonly pollMs: number;
  /**
   * Days an erased scope's events are dropped on arrival after the erasure began
   * (ERASURE_SUPPRESS_DAYS): longer than the event topics' retention, so that a message
   * still on Kafka, redelivered or replayed from the dead-letter topic, cannot bring an
   * erased event back.
   */
  readonly suppressDays: number;
}

/** ERASURE_*: the suppression list's rhythm and lifetime (docs/decisions/erasure.md). */
export function parseErasure(env: Env): ErasureConfig {
  return {
    pollMs: integer(env, 'ERASURE_POLL_MS', 5000, 100, 600_000),
    // Kafka's default retention is 7 days; 30 covers it and a DLQ replay weeks later.
    suppressDays: integer(env, 'ERASURE_SUPPRESS_DAYS', 30, 1, 36_500),
  };
}
