/**
 * Both sides of the ingest comparison are timed the same way, from the table itself: the
 * events table fills `ingested_at` with now64(3) when a row is stored, and the Kafka
 * engine's copy (`CREATE TABLE … AS events`) has the same default. The server's clock is
 * the machine's, the same one the bench reads for a run's start.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { waitFor } from '../../test/support/wait-for.js';

export interface IngestTiming {
  /** Every event over the time from the run's start (the consumer's spawn, the view's creation) to the last stored row. */
  readonly fromStart: number;
  /**
   * The events stored after the first stored row over the time from it to the last: the
   * rate once running, whatever the start-up cost. A run stored in one block has no span,
   * and gives NaN.
   */
  readonly firstToLast: number;
  /** Milliseconds from the start to the first stored row. */
  readonly firstRowMs: number;
}

/** What makes an event one event: copies of it (a batch stored twice) share it. */
const EVENT_KEY = 'org_id, project_id, occurred_at, id';

async function count(ch: ClickHouseClient, table: string, where = '1', what = 'count()'): Promise<number> {
  const result = await ch.query({ query: `SELECT ${what} AS n FROM ${table} WHERE ${where}`, format: 'JSONEachRow' });
  return Number((await result.json<{ n: string }>())[0]!.n);
}

/**
 * Waits, polling every 100 ms, until `table` holds `total` distinct events that match
 * `where`. Rows alone are not enough: a batch delivered again (a rebalance while a
 * consumer group forms) is stored twice, so the rows reach the total before the events
 * do. The distinct count reads every row, so it is asked only once the rows have, and at
 * most once a second: the wait should add little to the run it times.
 */
export async function waitForRows(ch: ClickHouseClient, table: string, total: number, what: string, where = '1'): Promise<void> {
  let distinctAskedAt = -Infinity;
  await waitFor(
    `${what} to store ${total} events in ${table}`,
    async () => {
      if ((await count(ch, table, where)) < total || performance.now() - distinctAskedAt < 1000) return undefined;
      distinctAskedAt = performance.now();
      return (await count(ch, table, where, `uniqExact(${EVENT_KEY})`)) >= total ? true : undefined;
    },
    30 * 60_000,
    100,
  );
}

/**
 * Waits until the server merges nothing: the parts an earlier run wrote are merged in the
 * background for seconds after it ends, and a run timed meanwhile shares the cores with
 * them. Each side starts on a server at rest, so neither pays for the other's writes.
 */
export async function mergesSettled(ch: ClickHouseClient): Promise<void> {
  await waitFor('the server to finish its background merges', async () => ((await count(ch, 'system.merges')) === 0 ? true : undefined), 10 * 60_000, 200);
}

/** The timing of a run that stored `total` events into `table`, started at `startedAt` (ms since the epoch). */
export async function ingestTiming(ch: ClickHouseClient, table: string, total: number, startedAt: number): Promise<IngestTiming> {
  const result = await ch.query({
    query: `SELECT toUnixTimestamp64Milli(min(ingested_at)) AS first, toUnixTimestamp64Milli(max(ingested_at)) AS last,
              uniqExactIf((${EVENT_KEY}), ingested_at > (SELECT min(ingested_at) FROM ${table})) AS after FROM ${table}`,
    format: 'JSONEachRow',
  });
  const row = (await result.json<{ first: string; last: string; after: string }>())[0]!;
  const [first, last, after] = [Number(row.first), Number(row.last), Number(row.after)];
  return {
    fromStart: Math.round(total / ((last - startedAt) / 1000)),
    firstToLast: last > first ? Math.round(after / ((last - first) / 1000)) : NaN,
    firstRowMs: first - startedAt,
  };
}

/** count() and a checksum of the distinct events, to show two tables hold the same events. */
export async function contents(ch: ClickHouseClient, table: string): Promise<string> {
  const result = await ch.query({
    query: `SELECT count() AS events, sum(h) AS checksum FROM (SELECT DISTINCT cityHash64(org_id, project_id, occurred_at, id, device_id, payload) AS h FROM ${table})`,
    format: 'JSONEachRow',
  });
  return JSON.stringify(await result.json());
}

/** Fails the run unless the two tables hold the same events: otherwise the figures are not comparable. */
export async function assertSameEvents(ch: ClickHouseClient, ours: string, theirs: string): Promise<void> {
  const [a, b] = [await contents(ch, ours), await contents(ch, theirs)];
  if (a !== b) throw new Error(`${theirs} holds ${b}, ${ours} ${a}: not the same events`);
}

/** p50 and p99 of produce-to-stored, in ms, of the rows matching `where`: ingested_at minus the occurred_at the producer set at send time. */
export async function storedDelay(ch: ClickHouseClient, table: string, where: string): Promise<{ p50: number; p99: number; rows: number }> {
  const result = await ch.query({
    query: `SELECT quantilesExact(0.5, 0.99)(toUnixTimestamp64Milli(ingested_at) - toUnixTimestamp64Milli(occurred_at)) AS q, count() AS rows FROM ${table} WHERE ${where}`,
    format: 'JSONEachRow',
  });
  const row = (await result.json<{ q: number[]; rows: string }>())[0]!;
  return { p50: Number(row.q[0]), p99: Number(row.q[1]), rows: Number(row.rows) };
}
