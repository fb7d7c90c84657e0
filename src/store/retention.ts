import { Gauge, type Registry } from 'prom-client';
import type { Logger } from '../observability/logger.js';
import type { ClickHouseConfig } from './clickhouse-settings.js';
import { createClickHouseServerTransport } from './clickhouse-server-transport.js';
import { idempotentCommand } from './idempotent-command.js';
import { DEVICE_EVENTS_TABLE } from './device-events.js';
import { monthsBetween, type StoreLayout } from './migrations.js';
import type { RetentionConfig } from './retention-settings.js';
import type { SqlTransport } from './sql-transport.js';

/**
 * The tables whose rows are events, partitioned by the month of occurred_at: retention drops
 * the same months from each. The spans (event_spans, device_spans) are bounds, not rows of
 * events, and are left as they are (docs/decisions/retention.md); the command log is the
 * embedded bus's command topics, which events are derived from, not the other way round.
 */
export const RETENTION_TABLES: readonly string[] = ['events', DEVICE_EVENTS_TABLE];

/** How often a gateway drops what passed the cutoff: a month goes whole, so an hour late is nothing. */
export const RETENTION_RUN_MS = 3_600_000;

const DAY_MS = 86_400_000;

/** The instant before which events are past retention. */
export function retentionCutoff(now: Date, days: number): Date {
  return new Date(now.getTime() - days * DAY_MS);
}

/** The month (YYYYMM) of an instant, in UTC as the partition key reads it. */
export function monthOf(instant: Date): number {
  return instant.getUTCFullYear() * 100 + instant.getUTCMonth() + 1;
}

/**
 * The months from `oldest` (YYYYMM) whose every instant lies before `cutoff`: a month goes
 * once the first instant of the next one is at or before the cutoff, never while it may
 * hold an event that is still kept.
 */
export function monthsPast(oldest: number, cutoff: Date): number[] {
  // The month before the cutoff's ends at or before it; the cutoff's own month ends after it.
  const last = previousMonth(monthOf(cutoff));
  return oldest > last ? [] : monthsBetween(oldest, last);
}

function previousMonth(month: number): number {
  return month % 100 === 1 ? month - 89 : month - 1;
}

/** Where one table's months are dropped: the node that holds them and the statement's table clause. */
interface Target {
  readonly transport: SqlTransport;
  /** The table holding the rows on that node: the table itself, or its _local one on a cluster. */
  readonly table: (name: string) => string;
  /** ` ON CLUSTER c` on a replicated cluster, where one statement reaches every node. */
  readonly onCluster: string;
  /** Where the oldest month is read: the table the drop names, or on a replicated cluster the Distributed one over every shard. */
  readonly oldestOf: (name: string) => string;
}

export interface RetentionRun {
  /** Partitions dropped, as `table/YYYYMM`, every node's together. */
  readonly dropped: readonly string[];
  /** The oldest event kept, after the drop; undefined when the store holds none. */
  readonly oldestKept: Date | undefined;
}

export interface Retention {
  /** Drops what is past EVENTS_RETENTION_DAYS at `now`; nothing when every event is kept. */
  run(now?: Date): Promise<RetentionRun>;
  /** Drops every month wholly before `cutoff`, whatever the setting: the run's step, and an operator's. */
  dropBefore(cutoff: Date): Promise<RetentionRun>;
  /** Stops the periodic runs and closes the shards' own connections. */
  close(): Promise<void>;
}

export interface RetentionOptions {
  /** The store the gateway reads (on a cluster, the entry node). */
  readonly transport: SqlTransport;
  readonly layout: StoreLayout;
  readonly settings: RetentionConfig;
  /** The ClickHouse server's settings: an unreplicated cluster's shards are reached one by one at their CLICKHOUSE_SHARD_URLS. */
  readonly clickhouse: ClickHouseConfig | undefined;
  /** The gauge of the oldest event kept is registered here (the gateway's /metrics registry). */
  readonly registry: Registry;
  readonly logger: Logger;
  /** RETENTION_RUN_MS unless set; 0: no periodic run (only run() and dropBefore()). */
  readonly everyMs?: number;
}

async function targets(options: RetentionOptions): Promise<{ targets: Target[]; owned: SqlTransport[] }> {
  const { layout, transport, clickhouse } = options;
  if (layout.kind === 'single') return { targets: [{ transport, table: (name) => name, onCluster: '', oldestOf: (name) => name }], owned: [] };
  const local = (name: string): string => `${name}_local`;
  if (layout.replicated) return { targets: [{ transport, table: local, onCluster: ` ON CLUSTER ${layout.cluster}`, oldestOf: (name) => name }], owned: [] };
  // Without Keeper DDL each shard drops its own, as each ran its own migrations.
  const urls = clickhouse?.cluster?.shardUrls;
  if (clickhouse === undefined || urls === undefined) return { targets: [{ transport, table: local, onCluster: '', oldestOf: local }], owned: [] };
  const owned = await Promise.all(urls.map((url) => createClickHouseServerTransport({ ...clickhouse, url })));
  return { targets: owned.map((shard) => ({ transport: shard, table: local, onCluster: '', oldestOf: local })), owned };
}

/** The month of the oldest row a table holds; min of the partition key's column is read from the parts' own indexes. */
async function oldestMonth(transport: SqlTransport, table: string): Promise<number | undefined> {
  const [row] = await transport.query<{ rows: number | string; month: number | string }>(`SELECT count() AS rows, toYYYYMM(min(occurred_at)) AS month FROM ${table}`);
  return row === undefined || Number(row.rows) === 0 ? undefined : Number(row.month);
}

/**
 * Retention by whole partitions (docs/decisions/retention.md): every run lists, per table
 * and per node, the months from the oldest row it holds to the last month wholly past the
 * cutoff, and drops each. A drop removes a partition's parts as files, with no rewrite of
 * any row, and is a no-op for a month already gone, so runs repeat safely and a crash
 * between two drops is finished by the next run.
 */
export async function createRetention(options: RetentionOptions): Promise<Retention> {
  const { transport, settings, logger } = options;
  const { targets: nodes, owned } = await targets(options);
  const oldestKept = new Gauge({
    name: 'events_oldest_kept_timestamp_seconds',
    help: 'occurred_at of the oldest event the store holds, as of the last retention run (EVENTS_RETENTION_DAYS); absent while it holds none.',
    registers: [options.registry],
  });

  async function readOldest(): Promise<Date | undefined> {
    const [row] = await transport.query<{ rows: number | string; oldest_ms: number | string }>(
      'SELECT count() AS rows, toUnixTimestamp64Milli(min(occurred_at)) AS oldest_ms FROM events',
    );
    if (row === undefined || Number(row.rows) === 0) {
      oldestKept.reset();
      return undefined;
    }
    const oldest = new Date(Number(row.oldest_ms));
    oldestKept.set(oldest.getTime() / 1000);
    return oldest;
  }

  async function dropBefore(cutoff: Date): Promise<RetentionRun> {
    const dropped: string[] = [];
    for (const node of nodes) {
      for (const name of RETENTION_TABLES) {
        const table = node.table(name);
        const oldest = await oldestMonth(node.transport, node.oldestOf(name));
        if (oldest === undefined) continue;
        for (const month of monthsPast(oldest, cutoff)) {
          // A number this module made, written as the literal a partition ID must be.
          // Asked again where the server did not answer in time: a drop waits for the partition's merges.
          await idempotentCommand(node.transport, `ALTER TABLE ${table}${node.onCluster} DROP PARTITION ID '${month}'`);
          dropped.push(`${table}/${month}`);
        }
      }
    }
    if (dropped.length > 0) logger.info({ cutoff: cutoff.toISOString(), dropped }, 'events past retention dropped');
    return { dropped, oldestKept: await readOldest() };
  }

  async function run(now = new Date()): Promise<RetentionRun> {
    if (settings.days === undefined) return { dropped: [], oldestKept: await readOldest() };
    return dropBefore(retentionCutoff(now, settings.days));
  }

  let running: Promise<unknown> = Promise.resolve();
  const tick = (): void => {
    running = run().catch((error: unknown) => logger.warn({ err: error }, 'retention run failed; the next run tries again'));
  };
  const everyMs = options.everyMs ?? RETENTION_RUN_MS;
  const timer = everyMs > 0 ? setInterval(tick, everyMs) : undefined;
  timer?.unref();
  // The first run is waited for: a start drops what passed the cutoff while the process was
  // down before it serves a read, and no write of this process races it. Its failure is
  // logged, not fatal: a store that cannot drop now can still serve what it holds.
  tick();
  await running;

  return {
    run,
    dropBefore,
    async close() {
      if (timer !== undefined) clearInterval(timer);
      await running;
      for (const shard of owned) await shard.close();
    },
  };
}
