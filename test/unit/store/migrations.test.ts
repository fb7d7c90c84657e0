import { expect } from 'chai';
import { backfills, migrationStatements, monthsBetween, viewChanges } from '../../../src/store/migrations.js';

const TABLES = ['events', 'events_by_device', 'device_spans_v2', 'event_spans', 'idempotency_keys', 'command_log', 'erasures'];
/** Each node's own record of the backfills it ran, created after the tables and the view. */
const LEDGER = 'store_backfills';
const CREATED = /^CREATE TABLE IF NOT EXISTS (\w+)/;
const INGESTED_INDEX = 'ADD INDEX IF NOT EXISTS ingested_idx ingested_at TYPE minmax GRANULARITY 1';
const PROJECT_INDEX = 'ADD INDEX IF NOT EXISTS project_idx project_id TYPE set(0) GRANULARITY 1';
const FILTER_INDEXES = ['domain', 'entity', 'action'].map((column) => `ADD INDEX IF NOT EXISTS ${column}_idx ${column} TYPE set(0) GRANULARITY 1`);
/** Months whose parts are all a day old merge into one part, in both tables partitioned by month. */
const COLD_MERGED = 'MODIFY SETTING min_age_to_force_merge_seconds = 86400, min_age_to_force_merge_on_partition_only = 1';
const ALTERS = [INGESTED_INDEX, PROJECT_INDEX, ...FILTER_INDEXES, COLD_MERGED];
/** The device table's parts compact at any size: a page reads a granule of each of several parts. */
const DEVICE_SETTINGS = `${COLD_MERGED}, min_bytes_for_wide_part = 1000000000000000, min_rows_for_wide_part = 1000000000000000`;
/** Every ALTER of a layout: the events table's, then the device table's. */
/** The spans' count of events, added to the spans of earlier versions. */
const SPANS_COUNT = 'ADD COLUMN IF NOT EXISTS events SimpleAggregateFunction(sum, UInt64)';
const allAlters = (table: (name: string) => string) => [
  ...ALTERS.map((a) => `ALTER TABLE ${table('events')} ${a}`),
  `ALTER TABLE ${table('events_by_device')} ${DEVICE_SETTINGS}`,
  `ALTER TABLE ${table('event_spans')} ${SPANS_COUNT}`,
];

describe('migrations', () => {
  it('creates the tables on one node with MergeTree engines', () => {
    const statements = migrationStatements({ kind: 'single' }).filter((s) => CREATED.test(s));
    expect(statements.map((s) => /^CREATE TABLE IF NOT EXISTS (\w+) \(/.exec(s)?.[1])).to.deep.equal([...TABLES, LEDGER]);
    expect(statements[0]).to.match(/ENGINE = ReplacingMergeTree\(ingested_at\)\s+PARTITION BY toYYYYMM\(occurred_at\)\s+ORDER BY \(org_id, project_id, occurred_at, id\)$/);
    for (const s of statements) expect(s).to.not.match(/ON CLUSTER|Replicated|Distributed/);
  });

  it('adds the skip indexes, the merging of past months and compact device parts to the tables after creating them, so existing tables gain them too', () => {
    const statements = migrationStatements({ kind: 'single' });
    expect(statements[0]).to.match(/^CREATE TABLE IF NOT EXISTS events \(/);
    expect(statements.filter((s) => s.startsWith('ALTER'))).to.deep.equal(allAlters((t) => t));
    expect(statements[statements.indexOf(`ALTER TABLE events_by_device ${DEVICE_SETTINGS}`) - 1]).to.match(/^CREATE TABLE IF NOT EXISTS events_by_device \(/);
    expect(statements.slice(1, 1 + ALTERS.length)).to.deep.equal(ALTERS.map((a) => `ALTER TABLE events ${a}`));
  });

  it('puts the skip indexes and table settings on the local table of a cluster, never on the Distributed one', () => {
    const replicated = migrationStatements({ kind: 'cluster', cluster: 'telemetry', replicated: true });
    const onLocal = ALTERS.map((a) => `ALTER TABLE events_local ON CLUSTER telemetry ${a}`);
    // A Distributed table keeps the columns it was created with: the spans' one takes the count too.
    const distributedSpans = (onCluster: string) => `ALTER TABLE event_spans${onCluster} ${SPANS_COUNT}`;
    expect(replicated.filter((s) => s.startsWith('ALTER'))).to.deep.equal([...allAlters((t) => `${t}_local ON CLUSTER telemetry`), distributedSpans(' ON CLUSTER telemetry')]);
    // Between the local table and the Distributed table over it.
    expect(replicated.slice(0, ALTERS.length + 2).map((s) => (s.startsWith('ALTER') ? s : s.split(' (')[0]!.split('\n')[0]))).to.deep.equal([
      'CREATE TABLE IF NOT EXISTS events_local ON CLUSTER telemetry',
      ...onLocal,
      'CREATE TABLE IF NOT EXISTS events ON CLUSTER telemetry AS events_local',
    ]);
    const plain = migrationStatements({ kind: 'cluster', cluster: 'telemetry', replicated: false });
    expect(plain.filter((s) => s.startsWith('ALTER'))).to.deep.equal([...allAlters((t) => `${t}_local`), distributedSpans('')]);
  });

  it('creates replicated local tables and Distributed tables over them on every node of a cluster with Keeper', () => {
    const statements = migrationStatements({ kind: 'cluster', cluster: 'telemetry', replicated: true }).filter((s) => CREATED.test(s));
    expect(statements).to.have.length(TABLES.length * 2 + 1);
    const [eventsLocal, events, devicesLocal, devices, deviceSpansLocal, deviceSpans, spansLocal, spans, keysLocal, keys] = statements;
    expect(eventsLocal).to.match(/^CREATE TABLE IF NOT EXISTS events_local ON CLUSTER telemetry \(/);
    expect(eventsLocal).to.include("ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', ingested_at)");
    expect(eventsLocal).to.include('ORDER BY (org_id, project_id, occurred_at, id)');
    // One project's events on one shard: the feed's WHERE fixes org_id and project_id.
    expect(events).to.equal(
      'CREATE TABLE IF NOT EXISTS events ON CLUSTER telemetry AS events_local\n  ENGINE = Distributed(telemetry, currentDatabase(), events_local, cityHash64(org_id, project_id))',
    );
    expect(devicesLocal).to.include("ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', ingested_at)");
    // A device's events on its project's shard.
    expect(devices).to.include('Distributed(telemetry, currentDatabase(), events_by_device_local, cityHash64(org_id, project_id))');
    expect(deviceSpansLocal).to.include("ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}')");
    expect(deviceSpans).to.include('Distributed(telemetry, currentDatabase(), device_spans_v2_local, cityHash64(org_id, project_id))');
    expect(spansLocal).to.include("ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}')");
    // A project's span on its events' shard.
    expect(spans).to.include('Distributed(telemetry, currentDatabase(), event_spans_local, cityHash64(org_id, project_id))');
    expect(keysLocal).to.include("ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}')");
    expect(keys).to.include('Distributed(telemetry, currentDatabase(), idempotency_keys_local, cityHash64(org_id, scope, key))');
  });

  it('creates plain local tables and Distributed tables, without ON CLUSTER, on a cluster without Keeper', () => {
    const statements = migrationStatements({ kind: 'cluster', cluster: 'telemetry', replicated: false }).filter((s) => CREATED.test(s));
    expect(statements.map((s) => CREATED.exec(s)?.[1])).to.deep.equal([...TABLES.flatMap((t) => [`${t}_local`, t]), LEDGER]);
    for (const s of statements) expect(s).to.not.match(/ON CLUSTER|Replicated/);
    expect(statements[0]).to.include('ENGINE = ReplacingMergeTree(ingested_at)');
  });

  it('keeps the spans, the device table and the device spans with views on the table that takes inserts: events on one node, the local table on a cluster', () => {
    const viewOf = (statements: string[], name: string) => statements.find((s) => s.startsWith(`CREATE MATERIALIZED VIEW IF NOT EXISTS ${name}`));
    const single = migrationStatements({ kind: 'single' });
    expect(viewOf(single, 'event_spans_view')).to.match(/^CREATE MATERIALIZED VIEW IF NOT EXISTS event_spans_view TO event_spans AS\s+SELECT .* FROM events\s+GROUP BY org_id, project_id, domain, entity, action$/s);
    expect(viewOf(single, 'events_by_device_view')).to.match(
      /^CREATE MATERIALIZED VIEW IF NOT EXISTS events_by_device_view TO events_by_device AS\s+SELECT .*assumeNotNull\(device_id\) AS device_id.* FROM events\s+WHERE device_id IS NOT NULL$/s,
    );
    const replicated = migrationStatements({ kind: 'cluster', cluster: 'telemetry', replicated: true });
    expect(viewOf(replicated, 'event_spans_view')).to.match(/^CREATE MATERIALIZED VIEW IF NOT EXISTS event_spans_view ON CLUSTER telemetry TO event_spans_local AS\s+SELECT .* FROM events_local\s+GROUP/s);
    expect(viewOf(replicated, 'events_by_device_view')).to.match(/^CREATE MATERIALIZED VIEW IF NOT EXISTS events_by_device_view ON CLUSTER telemetry TO events_by_device_local AS\s+SELECT .* FROM events_local\s+WHERE/s);
    const plain = migrationStatements({ kind: 'cluster', cluster: 'telemetry', replicated: false });
    expect(viewOf(plain, 'event_spans_view')).to.match(/^CREATE MATERIALIZED VIEW IF NOT EXISTS event_spans_view TO event_spans_local AS\s+SELECT .* FROM events_local\s+GROUP/s);
    expect(viewOf(plain, 'events_by_device_view')).to.match(/^CREATE MATERIALIZED VIEW IF NOT EXISTS events_by_device_view TO events_by_device_local AS\s+SELECT .* FROM events_local\s+WHERE/s);
    expect(viewOf(single, 'device_spans_v2_view')).to.match(
      /^CREATE MATERIALIZED VIEW IF NOT EXISTS device_spans_v2_view TO device_spans_v2 AS\s+SELECT .*min\(occurred_at\) AS oldest, max\(occurred_at\) AS newest, count\(\) AS events\s+FROM events\s+WHERE device_id IS NOT NULL\s+GROUP BY org_id, project_id, device_id$/s,
    );
    expect(viewOf(replicated, 'device_spans_v2_view')).to.match(/^CREATE MATERIALIZED VIEW IF NOT EXISTS device_spans_v2_view ON CLUSTER telemetry TO device_spans_v2_local AS\s+SELECT .* FROM events_local\s+WHERE/s);
    for (const statements of [single, replicated]) {
      const at = (prefix: RegExp) => statements.findIndex((s) => prefix.test(s));
      // After every table they join, and before the ledger whose backfills they must precede.
      for (const [view, table] of [
        ['event_spans_view', /^CREATE TABLE IF NOT EXISTS event_spans\b/],
        ['events_by_device_view', /^CREATE TABLE IF NOT EXISTS events_by_device\b/],
        ['device_spans_v2_view', /^CREATE TABLE IF NOT EXISTS device_spans_v2\b/],
      ] as const) {
        const created = at(new RegExp(`^CREATE MATERIALIZED VIEW IF NOT EXISTS ${view}`));
        expect(created).to.be.greaterThan(at(table)).and.greaterThan(at(/^CREATE TABLE IF NOT EXISTS events\b/));
        expect(created).to.be.lessThan(at(/^CREATE TABLE IF NOT EXISTS store_backfills/));
      }
    }
  });

  it('orders the device table by device within a project, partitioned by month as events are, in granules of 1,024 rows', () => {
    const created = migrationStatements({ kind: 'single' }).find((s) => s.startsWith('CREATE TABLE IF NOT EXISTS events_by_device ('));
    expect(created).to.include('device_id UUID,');
    expect(created).to.match(
      /ENGINE = ReplacingMergeTree\(ingested_at\)\s+PARTITION BY toYYYYMM\(occurred_at\)\s+ORDER BY \(org_id, project_id, device_id, occurred_at, id\)\s+SETTINGS index_granularity = 1024$/,
    );
  });

  it("keeps the device spans in granules of 256 rows, and neither creates nor drops an earlier version's spans", () => {
    for (const layout of [{ kind: 'single' }, { kind: 'cluster', cluster: 'telemetry', replicated: true }] as const) {
      const statements = migrationStatements(layout);
      const created = statements.find((s) => /^CREATE TABLE IF NOT EXISTS device_spans_v2(_local)? /.test(s));
      expect(created).to.match(/ORDER BY \(org_id, project_id, device_id\)\s+SETTINGS index_granularity = 256$/);
      // Still written by its own view where an earlier version left it, for that version's processes.
      expect(statements.filter((s) => /\bdevice_spans(_local|_view)?\b/.test(s))).to.deep.equal([]);
    }
  });

  it('backfills the spans, the device table and the device spans from the events a month at a time: through the Distributed tables on a replicated cluster, shard by shard without Keeper', () => {
    const month = /toYYYYMM\(occurred_at\) = \{month:UInt32\}/;
    const byName = (layout: Parameters<typeof backfills>[0]) => Object.fromEntries(backfills(layout).map((b) => [b.name, b]));
    const single = byName({ kind: 'single' });
    expect(Object.keys(single)).to.have.members(['event_spans', 'event_spans_events', 'events_by_device', 'device_spans_v2']);
    // A store whose spans are backfilled in this version has their counts with them.
    expect(single['event_spans']!.covers).to.deep.equal(['event_spans_events']);
    expect(single['event_spans_events']).to.deep.include({ table: 'event_spans', statement: single['event_spans']!.statement, covers: [] });
    expect(single['device_spans_v2']!.statement).to.match(/^INSERT INTO device_spans_v2 SELECT .* FROM events\s+WHERE device_id IS NOT NULL AND toYYYYMM\(occurred_at\) = \{month:UInt32\}\s+GROUP BY org_id, project_id, device_id$/s);
    expect(single['event_spans']).to.deep.include({ source: 'events', view: 'event_spans_view' });
    expect(single['event_spans']!.statement).to.match(/^INSERT INTO event_spans SELECT .* FROM events\s+WHERE toYYYYMM\(occurred_at\) = \{month:UInt32\}\s+GROUP BY org_id, project_id, domain, entity, action$/s);
    expect(single['events_by_device']).to.deep.include({ source: 'events', view: 'events_by_device_view' });
    expect(single['events_by_device']!.statement).to.match(/^INSERT INTO events_by_device SELECT .* FROM events\s+WHERE device_id IS NOT NULL AND toYYYYMM\(occurred_at\) = \{month:UInt32\}$/s);
    // Each row written on its shard before the insert returns, so a page after the start sees it.
    for (const backfill of backfills({ kind: 'cluster', cluster: 'telemetry', replicated: true })) {
      expect(backfill.statement).to.match(new RegExp(`^INSERT INTO ${backfill.table} SETTINGS distributed_foreground_insert = 1 SELECT .* FROM events\\s+`, 's')).and.to.match(month);
    }
    for (const backfill of backfills({ kind: 'cluster', cluster: 'telemetry', replicated: false })) {
      expect(backfill).to.deep.include({ source: 'events_local' });
      expect(backfill.statement).to.match(new RegExp(`^INSERT INTO ${backfill.table}_local SELECT .* FROM events_local\\s+`, 's')).and.to.match(month);
    }
  });

  it("replaces an earlier version's spans view with one that counts events, on the table that takes inserts", () => {
    const [single] = viewChanges({ kind: 'single' });
    expect(viewChanges({ kind: 'single' })).to.have.length(1);
    expect(single).to.deep.include({ view: 'event_spans_view', holds: 'count() AS events' });
    expect(single!.statement).to.match(/^ALTER TABLE event_spans_view MODIFY QUERY\s+SELECT .*count\(\) AS events\s+FROM events\s+GROUP BY/s);
    expect(viewChanges({ kind: 'cluster', cluster: 'telemetry', replicated: true })[0]!.statement).to.match(/^ALTER TABLE event_spans_view ON CLUSTER telemetry MODIFY QUERY\s+SELECT .* FROM events_local\s+GROUP BY/s);
    expect(viewChanges({ kind: 'cluster', cluster: 'telemetry', replicated: false })[0]!.statement).to.match(/^ALTER TABLE event_spans_view MODIFY QUERY\s+SELECT .* FROM events_local\s+GROUP BY/s);
  });

  it('walks the months of a backfill across the turn of a year', () => {
    expect(monthsBetween(202511, 202602)).to.deep.equal([202511, 202512, 202601, 202602]);
    expect(monthsBetween(202603, 202603)).to.deep.equal([202603]);
    expect(monthsBetween(199912, 200001)).to.deep.equal([199912, 200001]);
  });

  it('creates the ledger of backfills on every node of a replicated cluster, never replicated itself', () => {
    const ledger = (layout: Parameters<typeof migrationStatements>[0]) => migrationStatements(layout).at(-1);
    expect(ledger({ kind: 'cluster', cluster: 'telemetry', replicated: true })).to.match(/^CREATE TABLE IF NOT EXISTS store_backfills ON CLUSTER telemetry \(.*\) ENGINE = MergeTree ORDER BY name$/);
    expect(ledger({ kind: 'single' })).to.match(/^CREATE TABLE IF NOT EXISTS store_backfills \(.*\) ENGINE = MergeTree ORDER BY name$/);
  });
});
