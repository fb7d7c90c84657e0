import type { ClickHouseConfig } from './clickhouse-settings.js';
import { createClickHouseServerTransport } from './clickhouse-server-transport.js';
import { DEVICE_EVENTS_TABLE, DEVICE_SPANS_TABLE, EARLIER_DEVICE_SPANS_TABLE } from './device-events.js';
import { normalizedScope, scopeCondition, scopeKey, type ErasureScope } from './erasure-scope.js';
import { idempotentCommand } from './idempotent-command.js';
import type { StoreLayout } from './migrations.js';
import type { SqlParam, SqlTransport } from './sql-transport.js';
import { ERASURES_TABLE } from './erasures-table.js';


export type ErasureStatus = 'running' | 'finished';

export interface ErasureRecord {
  readonly erasureId: string;
  readonly scope: ErasureScope;
  readonly requestedBy: string;
  readonly reason: string;
  readonly status: ErasureStatus;
  readonly requestedAtMs: number;
  readonly startedAtMs: number;
  readonly finishedAtMs: number | undefined;
  /** Events the erasure removed, counted before each delete (copies of one event count once). */
  readonly eventsRemoved: number;
  readonly suppressUntilMs: number;
}

/** A table an erasure deletes from. */
interface ErasedTable {
  readonly name: string;
  /** `columns`: org_id, project_id, device_id are columns; `command-json`: they are members of the command's JSON value. */
  readonly ids: 'columns' | 'command-json';
  /** Whether a device's erasure deletes from it: the event spans are bounds of a project's events, not of a device's, and stay. */
  readonly forDevice: boolean;
  /** A table of an earlier version that this one does not create: erased where the store still has it. */
  readonly earlier?: true;
}

/**
 * Every table whose rows come from events: the events, the device-ordered copy, and the
 * spans (bounds of a project's and a device's events, src/store/event-spans.ts and
 * device-events.ts). A project's or organization's spans go with its events, so that not
 * even when it wrote stays; a device's erasure takes its device span, and leaves its
 * project's spans, which only ever widen and stay bounds of what the project holds.
 */
export const ERASED_TABLES: readonly ErasedTable[] = [
  { name: 'events', ids: 'columns', forDevice: true },
  { name: DEVICE_EVENTS_TABLE, ids: 'columns', forDevice: true },
  { name: DEVICE_SPANS_TABLE, ids: 'columns', forDevice: true },
  // Still filled by its view where an earlier version created it (src/store/device-events.ts).
  { name: EARLIER_DEVICE_SPANS_TABLE, ids: 'columns', forDevice: true, earlier: true },
  { name: 'event_spans', ids: 'columns', forDevice: false },
  // The embedded bus's command topics (src/store/clickhouse-command-log.ts): no read path reads
  // them, but they hold the scope's commands, which events were derived from. Read by no index:
  // a scan of a table a deployment on Kafka leaves empty.
  { name: 'command_log', ids: 'command-json', forDevice: true },
];

/** The scope as a condition on the table's rows, and its parameters. */
function conditionOf(table: ErasedTable, scope: ErasureScope): { where: string; params: Record<string, SqlParam> } {
  const condition = scopeCondition(scope);
  if (table.ids === 'columns') return condition;
  // The same parameters, compared with the command's members as lower-case text.
  const where = condition.where.replace(/\b(org_id|project_id|device_id) = \{(\w+):UUID\}/g, "lower(JSONExtractString(value, '$1')) = {$2:String}");
  return { where, params: condition.params };
}

function erasedTable(name: string): ErasedTable {
  const table = ERASED_TABLES.find((t) => t.name === name);
  if (table === undefined) throw new Error(`${name} is not a table an erasure deletes from`);
  return table;
}

/** The tables a scope's erasure deletes from, an earlier version's included whether the store has it or not (ErasureStore.tablesFor). */
export const tablesErasedFor = (scope: ErasureScope): readonly ErasedTable[] => ERASED_TABLES.filter((t) => scope.deviceId === undefined || t.forDevice);

interface RecordRow {
  erasure_id: string;
  org_id: string;
  project_id: string | null;
  device_id: string | null;
  requested_by: string;
  reason: string;
  status: string;
  requested_ms: number | string;
  started_ms: number | string;
  finished_ms: number | string | null;
  events_removed: number | string;
  suppress_until_ms: number | string;
}

const SELECT_RECORD = `SELECT erasure_id, org_id, project_id, device_id, requested_by, reason, status,
    toUnixTimestamp64Milli(requested_at) AS requested_ms, toUnixTimestamp64Milli(started_at) AS started_ms,
    if(isNull(finished_at), NULL, toUnixTimestamp64Milli(assumeNotNull(finished_at))) AS finished_ms,
    events_removed, toUnixTimestamp64Milli(suppress_until) AS suppress_until_ms
  FROM ${ERASURES_TABLE} FINAL`;

function recordOf(row: RecordRow): ErasureRecord {
  return {
    erasureId: row.erasure_id,
    scope: normalizedScope({ orgId: row.org_id, projectId: row.project_id ?? undefined, deviceId: row.device_id ?? undefined }),
    requestedBy: row.requested_by,
    reason: row.reason,
    status: row.status === 'finished' ? 'finished' : 'running',
    requestedAtMs: Number(row.requested_ms),
    startedAtMs: Number(row.started_ms),
    finishedAtMs: row.finished_ms === null ? undefined : Number(row.finished_ms),
    eventsRemoved: Number(row.events_removed),
    suppressUntilMs: Number(row.suppress_until_ms),
  };
}

/** Oldest first: by when each began, then by when it was asked (a scope's next erasure begins only after its last finished). */
const byStart = (a: ErasureRecord, b: ErasureRecord) => a.startedAtMs - b.startedAtMs || a.requestedAtMs - b.requestedAtMs;

/**
 * The erasures whose suppression lives at `nowMs`, one per scope: of a scope's records
 * whose window is open, the newest stands for it (its id and status are what a process
 * tells as new). A record whose window has ended suppresses nothing, however recent: an
 * older erasure never suppresses a scope again once its window is past. An older one whose
 * window is still open keeps the scope suppressed while it is, even where a newer one,
 * begun with a shorter ERASURE_SUPPRESS_DAYS, ended first: its window was sized to outlast
 * the Kafka copies of what it erased, and ending it early would let a replay of those back.
 */
export function governingErasures(records: readonly ErasureRecord[], nowMs: number): ErasureRecord[] {
  const newest = new Map<string, ErasureRecord>();
  for (const record of records) {
    if (record.suppressUntilMs <= nowMs) continue;
    const key = scopeKey(record.scope);
    const known = newest.get(key);
    if (known === undefined || byStart(known, record) < 0) newest.set(key, record);
  }
  return [...newest.values()];
}

/** Where deletes run: the node and the table clause, as retention reaches them (src/store/retention.ts). */
interface Target {
  readonly transport: SqlTransport;
  readonly table: (name: string) => string;
  readonly onCluster: string;
}

/** The erasures table and the deletes of a scope's rows, on one node or every shard of a cluster. */
export interface ErasureStore {
  /** Every erasure of exactly this scope, oldest first: the last is the one a run resumes or reports. */
  history(scope: ErasureScope): Promise<ErasureRecord[]>;
  /** Writes the record's current state (a new version of its row). */
  save(record: ErasureRecord): Promise<void>;
  /** Erasures whose suppression still lives at `nowMs`, running or finished, one per scope (governingErasures). */
  active(nowMs: number): Promise<ErasureRecord[]>;
  /** Every erasure of an organization, newest first: the audit. */
  ofOrg(orgId: string): Promise<ErasureRecord[]>;
  /** Distinct events the scope still holds (copies a merge has not folded yet count once). */
  countEvents(scope: ErasureScope): Promise<number>;
  /** The tables the scope's erasure deletes from (tablesErasedFor), an earlier version's only where the store has it. */
  tablesFor(scope: ErasureScope): Promise<string[]>;
  /** Rows the scope still holds in each table its erasure deletes from, copies and all: 0 everywhere once it is erased. */
  rowsLeft(scope: ErasureScope): Promise<Record<string, number>>;
  /** Deletes the scope's rows from one table, waiting until they are gone on every node. */
  deleteFrom(table: string, scope: ErasureScope): Promise<void>;
  close(): Promise<void>;
}

export interface ErasureStoreOptions {
  readonly transport: SqlTransport;
  readonly layout: StoreLayout;
  /** The server's settings: an unreplicated cluster's shards are reached one by one at CLICKHOUSE_SHARD_URLS. */
  readonly clickhouse: ClickHouseConfig | undefined;
}

async function targetsOf({ transport, layout, clickhouse }: ErasureStoreOptions): Promise<{ targets: Target[]; owned: SqlTransport[] }> {
  if (layout.kind === 'single') return { targets: [{ transport, table: (name) => name, onCluster: '' }], owned: [] };
  const local = (name: string): string => `${name}_local`;
  // A lightweight DELETE cannot run on a Distributed table: it runs on the local tables, on every node at once with Keeper DDL.
  if (layout.replicated) return { targets: [{ transport, table: local, onCluster: ` ON CLUSTER ${layout.cluster}` }], owned: [] };
  const urls = clickhouse?.cluster?.shardUrls;
  if (clickhouse === undefined || urls === undefined) return { targets: [{ transport, table: local, onCluster: '' }], owned: [] };
  const owned = await Promise.all(urls.map((url) => createClickHouseServerTransport({ ...clickhouse, url })));
  return { targets: owned.map((shard) => ({ transport: shard, table: local, onCluster: '' })), owned };
}

const msParam = (ms: number | undefined) => (ms === undefined ? null : ms);

export async function createErasureStore(options: ErasureStoreOptions): Promise<ErasureStore> {
  const { transport, layout } = options;
  const { targets, owned } = await targetsOf(options);
  // Each version is written before the call returns, on whichever shard holds the organization.
  const insertSettings = layout.kind === 'cluster' ? ' SETTINGS distributed_foreground_insert = 1' : '';
  // Asked at each erasure, not once: an operator may drop an earlier table while the gateway runs.
  const tablesFor = async (scope: ErasureScope): Promise<string[]> => {
    const tables = tablesErasedFor(scope);
    const earlier = tables.filter((t) => t.earlier === true).map((t) => t.name);
    const found = earlier.length === 0 ? [] : await transport.query<{ name: string }>('SELECT name FROM system.tables WHERE database = currentDatabase() AND name IN {names:Array(String)}', { names: earlier });
    const present = new Set(found.map((row) => row.name));
    return tables.filter((t) => t.earlier !== true || present.has(t.name)).map((t) => t.name);
  };
  return {
    async history(scope) {
      const s = normalizedScope(scope);
      // An absent project or device is NULL in the row and '' here, so that one condition matches both forms.
      const rows = await transport.query<RecordRow>(
        `${SELECT_RECORD} WHERE org_id = {org:UUID} AND ifNull(toString(project_id), '') = {project:String} AND ifNull(toString(device_id), '') = {device:String}`,
        { org: s.orgId, project: s.projectId ?? '', device: s.deviceId ?? '' },
      );
      return rows.map(recordOf).sort(byStart);
    },
    async save(record) {
      const s = record.scope;
      await transport.command(
        `INSERT INTO ${ERASURES_TABLE} (erasure_id, org_id, project_id, device_id, requested_by, reason, status, requested_at, started_at, finished_at, events_removed, suppress_until, updated_at)${insertSettings}
        VALUES ({id:UUID}, {org:UUID}, {project:Nullable(UUID)}, {device:Nullable(UUID)}, {by:String}, {reason:String}, {status:String},
          fromUnixTimestamp64Milli({requested:Int64}, 'UTC'), fromUnixTimestamp64Milli({started:Int64}, 'UTC'),
          if(isNull({finished:Nullable(Int64)}), NULL, fromUnixTimestamp64Milli(assumeNotNull({finished:Nullable(Int64)}), 'UTC')),
          {removed:UInt64}, fromUnixTimestamp64Milli({until:Int64}, 'UTC'), now64(3))`,
        {
          id: record.erasureId,
          org: s.orgId,
          project: s.projectId ?? null,
          device: s.deviceId ?? null,
          by: record.requestedBy,
          reason: record.reason,
          status: record.status,
          requested: record.requestedAtMs,
          started: record.startedAtMs,
          finished: msParam(record.finishedAtMs),
          removed: record.eventsRemoved,
          until: record.suppressUntilMs,
        },
      );
    },
    async active(nowMs) {
      // One short read a poll, as when a scope had one erasure: a process must apply a new suppression within the two
      // poll intervals the run waits, and on a busy chDB a costlier read (each scope's newest picked in SQL) took longer.
      const rows = await transport.query<RecordRow>(`${SELECT_RECORD} WHERE suppress_until > fromUnixTimestamp64Milli({now:Int64}, 'UTC')`, { now: nowMs });
      return governingErasures(rows.map(recordOf), nowMs);
    },
    async ofOrg(orgId) {
      const rows = await transport.query<RecordRow>(`${SELECT_RECORD} WHERE org_id = {org:UUID} ORDER BY requested_at DESC`, { org: orgId.toLowerCase() });
      return rows.map(recordOf);
    },
    async countEvents(scope) {
      const { where, params } = scopeCondition(scope);
      const [row] = await transport.query<{ n: number | string }>(`SELECT uniqExact(project_id, occurred_at, id) AS n FROM events WHERE ${where}`, params);
      return Number(row?.n ?? 0);
    },
    tablesFor,
    async rowsLeft(scope) {
      const left: Record<string, number> = {};
      for (const name of await tablesFor(scope)) {
        const { where, params } = conditionOf(erasedTable(name), scope);
        const [row] = await transport.query<{ n: number | string }>(`SELECT count() AS n FROM ${name} WHERE ${where}`, params);
        left[name] = Number(row?.n ?? 0);
      }
      return left;
    },
    async deleteFrom(name, scope) {
      const { where, params } = conditionOf(erasedTable(name), scope);
      for (const target of targets) {
        // A lightweight DELETE marks the rows gone at once for every read (the parts are
        // rewritten later by merges); sync 2 returns once every replica has done so. It
        // waits behind the table's earlier mutations, so it is asked again where the server
        // did not answer in time; deleting what is gone already changes nothing.
        await idempotentCommand(target.transport, `DELETE FROM ${target.table(name)}${target.onCluster} WHERE ${where} SETTINGS lightweight_deletes_sync = 2`, params);
      }
    },
    async close() {
      for (const shard of owned) await shard.close();
    },
  };
}
