import type { SqlTransport } from './sql-transport.js';

/**
 * Idempotent DDL, run at every start. The events table is shaped for the feed query:
 * the sort key (org_id, project_id, occurred_at, id) makes a keyset page a short
 * reverse read of one project's range. ReplacingMergeTree folds redelivered copies of
 * an event (same sort key) in background merges; until then the feed query collapses
 * them with LIMIT 1 BY id (docs/decisions/feed-storage.md).
 */
export const MIGRATIONS: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS events (
    org_id UUID,
    project_id UUID,
    occurred_at DateTime64(6, 'UTC'),
    id UUID,
    domain LowCardinality(String),
    entity LowCardinality(String),
    action LowCardinality(String),
    correlation_id Nullable(UUID),
    device_id Nullable(UUID),
    fleet_id Nullable(UUID),
    payload Nullable(String) CODEC(ZSTD(3)),
    source_service LowCardinality(Nullable(String)),
    span_id Nullable(String),
    trace_id Nullable(String),
    ingested_at DateTime64(3, 'UTC') DEFAULT now64(3),
    INDEX device_idx device_id TYPE bloom_filter GRANULARITY 4,
    INDEX fleet_idx fleet_id TYPE bloom_filter GRANULARITY 4
  ) ENGINE = ReplacingMergeTree(ingested_at)
  PARTITION BY toYYYYMM(occurred_at)
  ORDER BY (org_id, project_id, occurred_at, id)`,

  // Idempotency-Key records: the first record for a key wins; entries expire after a day.
  `CREATE TABLE IF NOT EXISTS idempotency_keys (
    org_id UUID,
    scope String,
    key String,
    fingerprint String,
    record String,
    created_at DateTime64(3, 'UTC') DEFAULT now64(3)
  ) ENGINE = MergeTree
  ORDER BY (org_id, scope, key, created_at)
  TTL toDateTime(created_at) + INTERVAL 1 DAY`,

  // The embedded bus keeps every accepted command here: with no Kafka, this table is the command topics.
  `CREATE TABLE IF NOT EXISTS command_log (
    topic LowCardinality(String),
    key String,
    command_id UUID,
    value String,
    headers String,
    logged_at DateTime64(3, 'UTC') DEFAULT now64(3)
  ) ENGINE = MergeTree
  ORDER BY (topic, logged_at, command_id)`,
];

export async function migrate(transport: SqlTransport): Promise<void> {
  for (const statement of MIGRATIONS) await transport.command(statement);
}
