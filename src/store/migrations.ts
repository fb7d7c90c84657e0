import { ERASURES_COLUMNS, ERASURES_ORDER, ERASURES_TABLE } from './erasures-table.js';
import { DEVICE_EVENTS_TABLE, DEVICE_SPANS_COLUMNS, DEVICE_SPANS_GRANULE, DEVICE_SPANS_ORDER, DEVICE_SPANS_TABLE, deviceEventsSelect, deviceSpansSelect } from './device-events.js';
import { EVENT_SPANS_COLUMNS, EVENT_SPANS_COUNT, EVENT_SPANS_ORDER, eventSpansSelect } from './event-spans.js';
import type { SqlTransport } from './sql-transport.js';

/** How the tables are laid out: one node, or a cluster of shards behind Distributed tables. */
export type StoreLayout =
  | { readonly kind: 'single' }
  | {
      readonly kind: 'cluster';
      /** The cluster's name in the servers' remote_servers. */
      readonly cluster: string;
      /**
       * With Keeper: replicated local tables, created on every node at once (ON CLUSTER).
       * Without: plain local tables, created on the node the gateway reaches; the same
       * statements must run on every other shard.
       */
      readonly replicated: boolean;
    };

/** The columns of an event row; `deviceId` is the device column's type (nullable in events, never null in the device table). */
const eventColumns = (deviceId: 'Nullable(UUID)' | 'UUID'): string => `org_id UUID,
    project_id UUID,
    occurred_at DateTime64(6, 'UTC'),
    id UUID,
    domain LowCardinality(String),
    entity LowCardinality(String),
    action LowCardinality(String),
    correlation_id Nullable(UUID),
    device_id ${deviceId},
    fleet_id Nullable(UUID),
    payload Nullable(String) CODEC(ZSTD(3)),
    source_service LowCardinality(Nullable(String)),
    span_id Nullable(String),
    trace_id Nullable(String),
    ingested_at DateTime64(3, 'UTC') DEFAULT now64(3)`;

interface TableSpec {
  readonly name: string;
  readonly columns: string;
  /** A MergeTree-family engine and its arguments; the replicated form is derived. */
  readonly engine: { readonly family: 'ReplacingMergeTree' | 'AggregatingMergeTree' | 'MergeTree'; readonly args: string };
  readonly clauses: string;
  /**
   * Skip indexes added with ALTER after the table exists, so that a table created by an
   * earlier version gains them too (CREATE TABLE IF NOT EXISTS leaves an existing table
   * as it is). Parts written before the ALTER get the index when merges rewrite them.
   */
  readonly addedIndexes?: readonly string[];
  /** Table settings, set with ALTER after the table exists for the same reason as `addedIndexes`. */
  readonly settings?: string;
  /** Columns added with ALTER after the table exists, for the same reason; on a cluster the Distributed table takes them too. */
  readonly addedColumns?: readonly string[];
  /** Distributed tables route rows by this: every read the gateway makes names all its columns, so it reads one shard. */
  readonly shardingKey: string;
}

/**
 * Once every part of a month's partition is a day old, the month is merged into one part
 * (docs/decisions/cold-partitions-merged.md): a page that reaches into past months then
 * opens one part a month, where merges alone left about ten, and what a query costs the
 * engine grows with the parts it opens. The month being written never qualifies; a late
 * event into a past month merges it once more a day later.
 */
export const COLD_PARTITION_AGE_SECONDS = 86_400;
const COLD_PARTITIONS_MERGED = `min_age_to_force_merge_seconds = ${COLD_PARTITION_AGE_SECONDS}, min_age_to_force_merge_on_partition_only = 1`;

/**
 * Every part of the table compact, all its columns in one file, however large
 * (docs/decisions/device-table-compact-parts.md). A device page reads a granule of each of
 * the several parts its window reaches; a wide part opens a file or two per column for it
 * and decompresses a block of each. Parts written before the setting stay wide until a
 * merge rewrites them.
 */
const COMPACT_PARTS = 'min_bytes_for_wide_part = 1000000000000000, min_rows_for_wide_part = 1000000000000000';

/**
 * The events table is shaped for the feed query: the sort key (org_id, project_id,
 * occurred_at, id) makes a keyset page a short reverse read of one project's range.
 * ReplacingMergeTree folds redelivered copies of an event (same sort key) in background
 * merges; until then the feed folds them as it reads, where they lie side by side
 * (docs/decisions/feed-table-and-page-query.md). A project's events live on one shard.
 */
const TABLES: readonly TableSpec[] = [
  {
    name: 'events',
    columns: `${eventColumns('Nullable(UUID)')},
    INDEX device_idx device_id TYPE bloom_filter GRANULARITY 4,
    INDEX fleet_idx fleet_id TYPE bloom_filter GRANULARITY 4`,
    engine: { family: 'ReplacingMergeTree', args: 'ingested_at' },
    clauses: `PARTITION BY toYYYYMM(occurred_at)
  ORDER BY (org_id, project_id, occurred_at, id)`,
    addedIndexes: [
      // The live tail reads by ingestion time: this lets a poll skip granules ingested before its position.
      'ingested_idx ingested_at TYPE minmax GRANULARITY 1',
      // The primary key alone opens, in every part a query reaches, the granule where the
      // project's key would fall even when the part holds none of its rows: a page that
      // finds nothing read a granule of every part in its reach. The exact set of projects
      // in each granule (a few, the table being sorted by project) lets it skip those parts.
      'project_idx project_id TYPE set(0) GRANULARITY 1',
      // The same for the feed's filters without an index of their own: a value that no
      // granule of the project holds (a filter that matches nothing) reads no granule.
      // Exact sets: a capped set gives up on a granule holding more values than its cap
      // (a granule shared with tenants writing many values), which is then always read.
      // These columns are vocabularies, so the sets stay small.
      'domain_idx domain TYPE set(0) GRANULARITY 1',
      'entity_idx entity TYPE set(0) GRANULARITY 1',
      'action_idx action TYPE set(0) GRANULARITY 1',
    ],
    settings: COLD_PARTITIONS_MERGED,
    shardingKey: 'cityHash64(org_id, project_id)',
  },
  // The events that name a device, ordered by it, filled by its view below
  // (docs/decisions/device-pages.md): a device's page is one short reverse read. Partitioned
  // as events are, so that a month dropped from one goes from both; copies fold as in events.
  // Granules of 1,024 rows: a page reads the newest granule of the device in every
  // partition it reaches, so a granule is what a month of history costs a page.
  {
    name: DEVICE_EVENTS_TABLE,
    columns: eventColumns('UUID'),
    engine: { family: 'ReplacingMergeTree', args: 'ingested_at' },
    clauses: `PARTITION BY toYYYYMM(occurred_at)
  ORDER BY (org_id, project_id, device_id, occurred_at, id)
  SETTINGS index_granularity = 1024`,
    settings: `${COLD_PARTITIONS_MERGED}, ${COMPACT_PARTS}`,
    shardingKey: 'cityHash64(org_id, project_id)',
  },
  // Where each device's events lie in time, and how many (src/store/device-events.ts): a row a
  // device, not partitioned; sharded as events are, so a device's span lives on its page's shard.
  // Small granules: a span is read by key, a granule of every part, for one row.
  {
    name: DEVICE_SPANS_TABLE,
    columns: DEVICE_SPANS_COLUMNS,
    engine: { family: 'AggregatingMergeTree', args: '' },
    clauses: `${DEVICE_SPANS_ORDER}
  SETTINGS index_granularity = ${DEVICE_SPANS_GRANULE}`,
    shardingKey: 'cityHash64(org_id, project_id)',
  },
  // Where each scope's events lie in time (src/store/event-spans.ts), filled by its view below;
  // sharded as events are, so a project's span lives on its events' shard.
  {
    name: 'event_spans',
    columns: EVENT_SPANS_COLUMNS,
    engine: { family: 'AggregatingMergeTree', args: '' },
    clauses: EVENT_SPANS_ORDER,
    addedColumns: [EVENT_SPANS_COUNT],
    shardingKey: 'cityHash64(org_id, project_id)',
  },
  // Idempotency-Key records: the first record for a key wins; entries expire after a day.
  {
    name: 'idempotency_keys',
    columns: `org_id UUID,
    scope String,
    key String,
    fingerprint String,
    record String,
    created_at DateTime64(3, 'UTC') DEFAULT now64(3)`,
    engine: { family: 'MergeTree', args: '' },
    clauses: `ORDER BY (org_id, scope, key, created_at)
  TTL toDateTime(created_at) + INTERVAL 1 DAY`,
    shardingKey: 'cityHash64(org_id, scope, key)',
  },
  // The embedded bus keeps every accepted command here: with no Kafka, this table is the command topics.
  {
    name: 'command_log',
    columns: `topic LowCardinality(String),
    key String,
    command_id UUID,
    value String,
    headers String,
    logged_at DateTime64(3, 'UTC') DEFAULT now64(3)`,
    engine: { family: 'MergeTree', args: '' },
    clauses: 'ORDER BY (topic, logged_at, command_id)',
    shardingKey: 'cityHash64(command_id)',
  },
  // Erasures of a tenant's data, their audit and their suppression (src/store/clickhouse-erasure.ts,
  // docs/decisions/erasure.md): a few rows, every version of one erasure on its organization's shard.
  {
    name: ERASURES_TABLE,
    columns: ERASURES_COLUMNS,
    engine: { family: 'ReplacingMergeTree', args: 'updated_at' },
    clauses: ERASURES_ORDER,
    shardingKey: 'cityHash64(org_id)',
  },
];

function engineOf(table: TableSpec, replicated: boolean): string {
  const { family, args } = table.engine;
  if (!replicated) return `${family}(${args})`;
  // Keeper path per shard and table; {shard} and {replica} are each server's macros.
  const keeper = `'/clickhouse/tables/{shard}/{database}/{table}', '{replica}'`;
  return `Replicated${family}(${args === '' ? keeper : `${keeper}, ${args}`})`;
}

/** Skip indexes and settings live with the data: on the MergeTree table, which on a cluster is the local one, never the Distributed one. */
function alterations(t: TableSpec, table: string, onCluster: string): string[] {
  return [
    ...addColumns(t, table, onCluster),
    ...(t.addedIndexes ?? []).map((index) => `ALTER TABLE ${table}${onCluster} ADD INDEX IF NOT EXISTS ${index}`),
    ...(t.settings === undefined ? [] : [`ALTER TABLE ${table}${onCluster} MODIFY SETTING ${t.settings}`]),
  ];
}

const addColumns = (t: TableSpec, table: string, onCluster: string): string[] =>
  (t.addedColumns ?? []).map((column) => `ALTER TABLE ${table}${onCluster} ADD COLUMN IF NOT EXISTS ${column}`);

/**
 * A table kept from the events by a materialized view. The view runs on every insert into
 * the events table of the node that takes the insert, so on a cluster it sits on the local
 * tables; rows written before the view existed are copied by a backfill.
 */
interface DerivedTable {
  /** The table the view writes, and the backfill's name in store_backfills. */
  readonly table: string;
  /** The rows of `source` the table holds, those `where` keeps when it is given. */
  readonly select: (source: string, where?: string) => string;
  /**
   * What this version's view writes that an earlier version's did not: a fragment of its
   * query the earlier one lacks, so that a start that finds the earlier view replaces its
   * query, and the backfill that fills it in for the events written before. A store whose
   * first backfill of the table runs in this version needs neither.
   */
  readonly change?: { readonly holds: string; readonly backfill: string };
}

const DERIVED: readonly DerivedTable[] = [
  { table: DEVICE_EVENTS_TABLE, select: deviceEventsSelect },
  { table: DEVICE_SPANS_TABLE, select: deviceSpansSelect },
  // The spans' count of events (src/store/event-spans.ts) came after the spans.
  { table: 'event_spans', select: eventSpansSelect, change: { holds: 'count() AS events', backfill: 'event_spans_events' } },
];

const viewName = (derived: DerivedTable) => `${derived.table}_view`;

function view(derived: DerivedTable, layout: StoreLayout): string {
  const name = viewName(derived);
  if (layout.kind === 'single') return `CREATE MATERIALIZED VIEW IF NOT EXISTS ${name} TO ${derived.table} AS\n  ${derived.select('events')}`;
  const onCluster = layout.replicated ? ` ON CLUSTER ${layout.cluster}` : '';
  return `CREATE MATERIALIZED VIEW IF NOT EXISTS ${name}${onCluster} TO ${derived.table}_local AS\n  ${derived.select('events_local')}`;
}

/** A view whose query changed since an earlier version, and the statement that replaces it where that version left it. */
export interface ViewChange {
  readonly view: string;
  /** What the view's stored query holds once it is this version's. */
  readonly holds: string;
  readonly statement: string;
}

export function viewChanges(layout: StoreLayout): ViewChange[] {
  const onCluster = layout.kind === 'cluster' && layout.replicated ? ` ON CLUSTER ${layout.cluster}` : '';
  const source = layout.kind === 'single' ? 'events' : 'events_local';
  return DERIVED.flatMap((derived) =>
    derived.change === undefined ? [] : [{ view: viewName(derived), holds: derived.change.holds, statement: `ALTER TABLE ${viewName(derived)}${onCluster} MODIFY QUERY\n  ${derived.select(source)}` }],
  );
}

/** A projection an earlier version created, and the statement that drops it. */
interface RetiredProjection {
  readonly table: string;
  readonly name: string;
  readonly drop: string;
}

/**
 * What earlier versions created and this one replaced, dropped once what replaced it is
 * filled. The by_device projection served device pages before the device table did; kept,
 * it would cost every insert a second sorted copy of the rows for nothing.
 */
export function retiredProjections(layout: StoreLayout): RetiredProjection[] {
  const [table, onCluster] = layout.kind === 'single' ? ['events', ''] : ['events_local', layout.replicated ? ` ON CLUSTER ${layout.cluster}` : ''];
  // Without alter_sync = 0 the ALTER waits for the mutation that removes the projection's
  // files from every part, which waits for the merges it joins: a start would hang on a
  // busy table (or one whose merges are stopped) for as long.
  return [{ table, name: 'by_device', drop: `ALTER TABLE ${table}${onCluster} DROP PROJECTION IF EXISTS by_device SETTINGS alter_sync = 0` }];
}

/** Each table's DDL: on one node the table itself; on a cluster a local table and a Distributed one over it. */
function tableStatements(layout: StoreLayout): string[] {
  if (layout.kind === 'single') {
    return TABLES.flatMap((t) => [
      `CREATE TABLE IF NOT EXISTS ${t.name} (\n    ${t.columns}\n  ) ENGINE = ${engineOf(t, false)}\n  ${t.clauses}`,
      ...alterations(t, t.name, ''),
    ]);
  }
  const onCluster = layout.replicated ? ` ON CLUSTER ${layout.cluster}` : '';
  return TABLES.flatMap((t) => [
    `CREATE TABLE IF NOT EXISTS ${t.name}_local${onCluster} (\n    ${t.columns}\n  ) ENGINE = ${engineOf(t, layout.replicated)}\n  ${t.clauses}`,
    ...alterations(t, `${t.name}_local`, onCluster),
    `CREATE TABLE IF NOT EXISTS ${t.name}${onCluster} AS ${t.name}_local\n  ENGINE = Distributed(${layout.cluster}, currentDatabase(), ${t.name}_local, ${t.shardingKey})`,
    // A Distributed table keeps the columns it was created with.
    ...addColumns(t, t.name, onCluster),
  ]);
}

/**
 * Which backfills a node has run. A table of its own on every node, never replicated: a
 * backfill is idempotent, so a node that runs one another node already ran costs time only.
 */
function backfillsTable(layout: StoreLayout): string {
  const onCluster = layout.kind === 'cluster' && layout.replicated ? ` ON CLUSTER ${layout.cluster}` : '';
  return `CREATE TABLE IF NOT EXISTS store_backfills${onCluster} (name String, done_at DateTime64(3, 'UTC') DEFAULT now64(3)) ENGINE = MergeTree ORDER BY name`;
}

/** Idempotent DDL for the layout, run at every start: the tables, the views that keep the derived ones, the backfills' ledger. */
export function migrationStatements(layout: StoreLayout): string[] {
  return [...tableStatements(layout), ...DERIVED.map((derived) => view(derived, layout)), backfillsTable(layout)];
}

/** What a backfill is: its name in the ledger, the table it reads, its view, and its statement for one month. */
export interface Backfill {
  readonly name: string;
  /** The derived table it fills. */
  readonly table: string;
  readonly source: string;
  readonly view: string;
  readonly statement: string;
  /** Later backfills of the same table that this one makes needless, recorded with it: it already writes what they add. */
  readonly covers: readonly string[];
}

/**
 * The derived tables' rows of the events written before their views existed, one month
 * (one partition) per statement, so that no statement reads more than a month of events
 * and each stays within the client's request timeout. On a replicated cluster the node the
 * gateway reaches fills every shard through the Distributed tables (each row written
 * before the insert returns); on a cluster without Keeper every shard runs its own
 * migrations, so each fills its own.
 */
export function backfills(layout: StoreLayout): Backfill[] {
  return DERIVED.flatMap((derived) => {
    const [target, source, settings] =
      layout.kind === 'single'
        ? [derived.table, 'events', '']
        : layout.replicated
          ? [derived.table, 'events', ' SETTINGS distributed_foreground_insert = 1']
          : [`${derived.table}_local`, 'events_local', ''];
    const statement = `INSERT INTO ${target}${settings} ${derived.select(source, 'toYYYYMM(occurred_at) = {month:UInt32}')}`;
    const first = { name: derived.table, table: derived.table, source, view: viewName(derived), statement };
    if (derived.change === undefined) return [{ ...first, covers: [] }];
    // The same rows again over an earlier view's: min and max fold them, and the count adds
    // what that view did not write (events written between the view's change and this read
    // count twice, a guess at a rate being all the count is).
    return [
      { ...first, covers: [derived.change.backfill] },
      { ...first, name: derived.change.backfill, covers: [] },
    ];
  });
}

/** The months from `first` to `last`, both YYYYMM. */
export function monthsBetween(first: number, last: number): number[] {
  const months: number[] = [];
  for (let month = first; month <= last; month = month % 100 === 12 ? month + 89 : month + 1) months.push(month);
  return months;
}

/**
 * How long after the view's creation the backfill waits before reading the events, on a
 * table that has rows: an insert begun before the view existed writes no span, and one
 * still running when the backfill reads its month would be missed by both. Longer than the
 * client lets an insert run (CLICKHOUSE_REQUEST_TIMEOUT_MS, 10 s by default; the runtime
 * passes that plus a margin when it is longer).
 */
export const BACKFILL_SETTLE_MS = 15_000;

/**
 * Waits until the view is `settleMs` old, where another process may write the table: not
 * on chDB, whose directory one process owns, and not on a table with no rows, which no
 * earlier version has written. Counted from the view's creation, not from this start, so a
 * start after a crashed backfill, or a second process starting meanwhile, waits as long.
 */
async function settleAfterView(transport: SqlTransport, source: string, view: string, settleMs: number): Promise<void> {
  if (transport.kind === 'chdb') return;
  const [row] = await transport.query<{ rows: number | string; age_ms: number | string }>(
    `SELECT (SELECT count() FROM ${source}) AS rows,
      toUnixTimestamp64Milli(now64(3)) - 1000 * toUnixTimestamp(metadata_modification_time) AS age_ms
    FROM system.tables WHERE database = currentDatabase() AND name = {view:String}`,
    { view },
  );
  if (row === undefined || Number(row.rows) === 0) return;
  // The creation time is in whole seconds: a second more.
  const wait = settleMs + 1000 - Number(row.age_ms);
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
}

export interface MigrateOptions {
  /** BACKFILL_SETTLE_MS unless set. */
  readonly settleMs?: number;
}

async function runBackfill(transport: SqlTransport, backfill: Backfill, settleMs: number): Promise<void> {
  const done = await transport.query<{ n: number | string }>('SELECT count() AS n FROM store_backfills WHERE name = {name:String}', { name: backfill.name });
  if (Number(done[0]?.n ?? 0) > 0) return;
  await settleAfterView(transport, backfill.source, backfill.view, settleMs);
  // min and max of the partition key are read from the parts' own minmax indexes.
  const [range] = await transport.query<{ rows: number | string; first: number | string; last: number | string }>(
    `SELECT count() AS rows, toYYYYMM(min(occurred_at)) AS first, toYYYYMM(max(occurred_at)) AS last FROM ${backfill.source}`,
  );
  if (range !== undefined && Number(range.rows) > 0) {
    for (const month of monthsBetween(Number(range.first), Number(range.last))) await transport.command(backfill.statement, { month });
  }
  // Recorded only once every month has run: a crash in between runs it all again, which is safe.
  for (const name of [backfill.name, ...backfill.covers]) await transport.command('INSERT INTO store_backfills (name) VALUES ({name:String})', { name });
}

export async function migrate(transport: SqlTransport, layout: StoreLayout = { kind: 'single' }, options: MigrateOptions = {}): Promise<void> {
  for (const ddl of migrationStatements(layout)) await transport.command(ddl);
  for (const change of viewChanges(layout)) {
    const [found] = await transport.query<{ query: string }>('SELECT create_table_query AS query FROM system.tables WHERE database = currentDatabase() AND name = {view:String}', { view: change.view });
    if (found !== undefined && !found.query.includes(change.holds)) await transport.command(change.statement);
  }
  for (const backfill of backfills(layout)) await runBackfill(transport, backfill, options.settleMs ?? BACKFILL_SETTLE_MS);
  for (const retired of retiredProjections(layout)) {
    // Dropping one is a mutation, even of a projection that is not there: only where it is.
    const [found] = await transport.query<{ n: number | string }>(
      'SELECT count() AS n FROM system.projections WHERE database = currentDatabase() AND table = {table:String} AND name = {name:String}',
      { table: retired.table, name: retired.name },
    );
    if (Number(found?.n ?? 0) > 0) await transport.command(retired.drop);
  }
}
