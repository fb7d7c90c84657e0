import { integer, type Env } from '../../settings/env.js';

export interface LiveTailConfig {
  /** Rows ingested less than this long ago are not read yet: inserts become visible out of ingested_at order (STREAM_SETTLE_MS). */
  readonly settleMs: number;
  /** Interval between the starts of the live tail's shared reads (STREAM_POLL_MS). */
  readonly pollMs: number;
  /** A comment line after this long without any other line (STREAM_HEARTBEAT_MS). */
  readonly heartbeatMs: number;
  /** Open streams per organization on one gateway process (STREAM_MAX_PER_ORG). */
  readonly maxPerOrg: number;
  /** Open streams per caller, the token's subject, on one gateway process (STREAM_MAX_PER_CALLER). */
  readonly maxPerCaller: number;
  /** Open streams on one gateway process in all (STREAM_MAX_PER_PROCESS). */
  readonly maxPerProcess: number;
  /** Bytes a stream may queue for a client that does not read them before it is closed (STREAM_MAX_BUFFER_BYTES). */
  readonly maxBufferBytes: number;
}

/** STREAM_*: the live tail's settle window, rhythm and caps (docs/decisions/live-tail.md). */
export function parseLiveTail(env: Env): LiveTailConfig {
  return {
    settleMs: integer(env, 'STREAM_SETTLE_MS', 2000, 0, 600_000),
    pollMs: integer(env, 'STREAM_POLL_MS', 500, 10, 60_000),
    heartbeatMs: integer(env, 'STREAM_HEARTBEAT_MS', 15_000, 100, 300_000),
    // The caps follow measured memory and CPU per stream (docs/decisions/live-tail-limits.md).
    maxPerOrg: integer(env, 'STREAM_MAX_PER_ORG', 1000, 1, 1_000_000),
    maxPerCaller: integer(env, 'STREAM_MAX_PER_CALLER', 100, 1, 1_000_000),
    maxPerProcess: integer(env, 'STREAM_MAX_PER_PROCESS', 10_000, 1, 1_000_000),
    maxBufferBytes: integer(env, 'STREAM_MAX_BUFFER_BYTES', 262_144, 1024, 1_073_741_824),
  };
}
