import { expect } from 'chai';
import { migrationStatements } from '../../../src/store/migrations.js';

const TABLES = ['events', 'idempotency_keys', 'command_log'];
const CREATED = /^CREATE TABLE IF NOT EXISTS (\w+)/;
const INGESTED_INDEX = 'ADD INDEX IF NOT EXISTS ingested_idx ingested_at TYPE minmax GRANULARITY 1';
const PROJECT_INDEX = 'ADD INDEX IF NOT EXISTS project_idx project_id TYPE set(0) GRANULARITY 1';
const FILTER_INDEXES = ['domain', 'entity', 'action'].map((column) => `ADD INDEX IF NOT EXISTS ${column}_idx ${column} TYPE set(0) GRANULARITY 1`);
const PROJECTION_MODE = "MODIFY SETTING deduplicate_merge_projection_mode = 'rebuild'";
const DEVICE_PROJECTION = 'ADD PROJECTION IF NOT EXISTS by_device (SELECT * ORDER BY (org_id, project_id, device_id, occurred_at, id))';
const ALTERS = [INGESTED_INDEX, PROJECT_INDEX, ...FILTER_INDEXES, PROJECTION_MODE, DEVICE_PROJECTION];

describe('migrations', () => {
  it('creates the three tables on one node with MergeTree engines', () => {
    const statements = migrationStatements({ kind: 'single' }).filter((s) => CREATED.test(s));
    expect(statements.map((s) => /^CREATE TABLE IF NOT EXISTS (\w+) \(/.exec(s)?.[1])).to.deep.equal(TABLES);
    expect(statements[0]).to.match(/ENGINE = ReplacingMergeTree\(ingested_at\)\s+PARTITION BY toYYYYMM\(occurred_at\)\s+ORDER BY \(org_id, project_id, occurred_at, id\)$/);
    for (const s of statements) expect(s).to.not.match(/ON CLUSTER|Replicated|Distributed/);
  });

  it('adds the skip indexes, the projection setting and the device projection to the events table after creating it, so existing tables gain them too', () => {
    const statements = migrationStatements({ kind: 'single' });
    expect(statements[0]).to.match(/^CREATE TABLE IF NOT EXISTS events \(/);
    expect(statements.filter((s) => s.startsWith('ALTER'))).to.deep.equal(ALTERS.map((a) => `ALTER TABLE events ${a}`));
    expect(statements.slice(1, 1 + ALTERS.length)).to.deep.equal(ALTERS.map((a) => `ALTER TABLE events ${a}`));
  });

  it('puts the skip indexes and the projection on the local table of a cluster, never on the Distributed one', () => {
    const replicated = migrationStatements({ kind: 'cluster', cluster: 'telemetry', replicated: true });
    const onLocal = ALTERS.map((a) => `ALTER TABLE events_local ON CLUSTER telemetry ${a}`);
    expect(replicated.filter((s) => s.startsWith('ALTER'))).to.deep.equal(onLocal);
    // Between the local table and the Distributed table over it.
    expect(replicated.slice(0, ALTERS.length + 2).map((s) => (s.startsWith('ALTER') ? s : s.split(' (')[0]!.split('\n')[0]))).to.deep.equal([
      'CREATE TABLE IF NOT EXISTS events_local ON CLUSTER telemetry',
      ...onLocal,
      'CREATE TABLE IF NOT EXISTS events ON CLUSTER telemetry AS events_local',
    ]);
    const plain = migrationStatements({ kind: 'cluster', cluster: 'telemetry', replicated: false });
    expect(plain.filter((s) => s.startsWith('ALTER'))).to.deep.equal(ALTERS.map((a) => `ALTER TABLE events_local ${a}`));
  });

  it('creates replicated local tables and Distributed tables over them on every node of a cluster with Keeper', () => {
    const statements = migrationStatements({ kind: 'cluster', cluster: 'telemetry', replicated: true }).filter((s) => CREATED.test(s));
    expect(statements).to.have.length(TABLES.length * 2);
    const [eventsLocal, events, keysLocal, keys] = statements;
    expect(eventsLocal).to.match(/^CREATE TABLE IF NOT EXISTS events_local ON CLUSTER telemetry \(/);
    expect(eventsLocal).to.include("ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', ingested_at)");
    expect(eventsLocal).to.include('ORDER BY (org_id, project_id, occurred_at, id)');
    // One project's events on one shard: the feed's WHERE fixes org_id and project_id.
    expect(events).to.equal(
      'CREATE TABLE IF NOT EXISTS events ON CLUSTER telemetry AS events_local\n  ENGINE = Distributed(telemetry, currentDatabase(), events_local, cityHash64(org_id, project_id))',
    );
    expect(keysLocal).to.include("ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}')");
    expect(keys).to.include('Distributed(telemetry, currentDatabase(), idempotency_keys_local, cityHash64(org_id, scope, key))');
  });

  it('creates plain local tables and Distributed tables, without ON CLUSTER, on a cluster without Keeper', () => {
    const statements = migrationStatements({ kind: 'cluster', cluster: 'telemetry', replicated: false }).filter((s) => CREATED.test(s));
    expect(statements.map((s) => CREATED.exec(s)?.[1])).to.deep.equal(TABLES.flatMap((t) => [`${t}_local`, t]));
    for (const s of statements) expect(s).to.not.match(/ON CLUSTER|Replicated/);
    expect(statements[0]).to.include('ENGINE = ReplacingMergeTree(ingested_at)');
  });
});
