/**
 * The erasures table: one record per erasure, its audit (who, why, when, how many events)
 * and its suppression (until when the scope's arriving events are dropped). A scope erased,
 * written again and erased again has a record for each erasure, each under its own id
 * (erasureId's ordinal), so that no later erasure rewrites an earlier one's audit. A change
 * of status is a new row of the same erasure_id with a later updated_at, folded by
 * ReplacingMergeTree and read with FINAL; sharded by organization, so every row of one
 * erasure, and every erasure of one scope, lies on one shard and FINAL folds them there.
 */
export const ERASURES_TABLE = 'erasures';

export const ERASURES_COLUMNS = `erasure_id UUID,
    org_id UUID,
    project_id Nullable(UUID),
    device_id Nullable(UUID),
    requested_by String,
    reason String,
    status LowCardinality(String),
    requested_at DateTime64(3, 'UTC'),
    started_at DateTime64(3, 'UTC'),
    finished_at Nullable(DateTime64(3, 'UTC')),
    events_removed UInt64,
    suppress_until DateTime64(3, 'UTC'),
    updated_at DateTime64(3, 'UTC')`;

export const ERASURES_ORDER = 'ORDER BY (org_id, erasure_id)';
