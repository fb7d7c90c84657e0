import { ENGINE_MAX_PARTITIONS_PER_INSERT } from './event-batches.js';

/**
 * The one seam between our SQL and a ClickHouse engine. The event store, the
 * idempotency store and the command log speak only this; chDB (in-process) and a
 * ClickHouse server (HTTP) are interchangeable behind it and run the same statements.
 */
/** Arrays bind to `{name:Array(T)}` placeholders; both engines' clients format them. */
export type SqlParam = string | number | boolean | null | readonly string[];
export type SqlParams = Readonly<Record<string, SqlParam>>;

/**
 * Settings of every JSONEachRow insert, on both engines.
 * - A JSON object given for a String column is kept as its JSON text, so a row can carry
 *   a payload as the object itself (src/store/event-rows.ts). It is the engines' default;
 *   it is set so that a server profile that turns it off cannot change what is stored.
 * - Timestamps are read best-effort, so an event's own JSON text, with occurred_at in
 *   RFC 3339, can be its row (src/store/event-row-text.ts). The store's own timestamp
 *   text reads the same under it.
 * - The partitions one insert may span: src/store/event-batches.ts splits below it.
 * - A materialized view's failure fails the insert (below).
 * - One thread parses the body. Split across threads, an ingest batch cost the server 8–16%
 *   more CPU per event and took longer (docs/decisions/ingest-event-bytes.md), its threads taking
 *   cores from the consumer and the broker; ingestion keeps two inserts in flight, which
 *   is the parallelism it needs.
 */
export const INSERT_SETTINGS = {
  input_format_json_read_objects_as_strings: 1,
  date_time_input_format: 'best_effort',
  input_format_parallel_parsing: 0,
  // A UInt64 setting, which the server client types as text.
  max_partitions_per_insert_block: String(ENGINE_MAX_PARTITIONS_PER_INSERT),
  // The device table is written only by its view (src/store/device-events.ts): a view's
  // failure ignored would leave an event stored and missing from its device's pages for
  // good. Failed, the batch is retried and its events folded as any redelivered copy; the
  // consumer's write probe covers every table a view writes, so a table that cannot take
  // a write is the store's fault, never the rows'. Set, so a server profile cannot turn
  // it on.
  materialized_views_ignore_errors: 0,
} as const;

/** One row as JSONEachRow text: a JSON object whose members are columns. Bytes are UTF-8. */
export type JsonRowText = string | Buffer;

const NEWLINE = 0x0a;

/** The rows as one JSONEachRow body, copied once into a buffer of its size (Buffer.concat cost twice as much per row). */
export function jsonEachRowBody(rows: readonly JsonRowText[]): Buffer {
  const parts = rows.map((row) => (typeof row === 'string' ? Buffer.from(row) : row));
  let length = 0;
  for (const part of parts) length += part.length + 1;
  const body = Buffer.allocUnsafe(length);
  let at = 0;
  for (const part of parts) {
    body.set(part, at);
    at += part.length;
    body[at++] = NEWLINE;
  }
  return body;
}

export interface InsertOptions {
  /**
   * Rows of the whole write this insert is one statement of (default: its own). The server
   * transport asks a server to buffer a small write (src/store/clickhouse-server-transport.ts),
   * which answers once the buffer is flushed; decided per statement, a large write's small
   * statements (a batch's span rows, the last months of a backfill split by partitions,
   * src/store/event-batches.ts) would each wait out a flush.
   */
  readonly writeRows?: number;
}

/**
 * The connections a query takes on a server. `follow` is for the loops that follow the
 * store's writes, once for the whole process: the live tail's shared read and its clock,
 * and the watch behind kept first pages. Each of their late answers costs every open tail
 * or every kept page, so they never wait for a socket behind the requests' page reads
 * (docs/decisions/feed-follow-lane.md). chDB runs one query at a time in
 * its process and has no lanes.
 */
export type QueryLane = 'requests' | 'follow';

export interface QueryOptions {
  /** Default: 'requests'. */
  readonly lane?: QueryLane;
}

export interface SqlTransport {
  /** Which engine answers; for logs and readiness, never for branching SQL. */
  readonly kind: 'chdb' | 'clickhouse-server';
  /** A statement that returns no rows (DDL). Parameters are bound by the engine: `{name:Type}`. */
  command(sql: string, params?: SqlParams): Promise<void>;
  /** A SELECT; each row is one JSONEachRow object. */
  query<Row>(sql: string, params?: SqlParams, options?: QueryOptions): Promise<Row[]>;
  /** Inserts rows as JSONEachRow, with INSERT_SETTINGS. */
  insert(table: string, rows: readonly JsonRowText[], options?: InsertOptions): Promise<void>;
  /**
   * Whether the engine answers. On a server this goes over a connection of its own: a
   * readiness probe must not queue behind the requests' queries, or a busy gateway reads
   * as down and a load balancer takes the last one out of rotation.
   */
  ping(): Promise<void>;
  close(): Promise<void>;
}
