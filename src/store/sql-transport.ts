/**
 * The one seam between our SQL and a ClickHouse engine. The event store, the
 * idempotency store and the command log speak only this; chDB (in-process) and a
 * ClickHouse server (HTTP) are interchangeable behind it and run the same statements.
 */
/** Arrays bind to `{name:Array(T)}` placeholders; both engines' clients format them. */
export type SqlParam = string | number | boolean | null | readonly string[];
export type SqlParams = Readonly<Record<string, SqlParam>>;

/**
 * Settings of every JSONEachRow insert, on both engines. A JSON object given for a String
 * column is kept as its JSON text, so a row can carry a payload as the object itself
 * (src/store/event-rows.ts). It is the engines' default; it is set so that a server
 * profile that turns it off cannot change what is stored.
 */
export const INSERT_SETTINGS = { input_format_json_read_objects_as_strings: 1 } as const;

export interface SqlTransport {
  /** Which engine answers; for logs and readiness, never for branching SQL. */
  readonly kind: 'chdb' | 'clickhouse-server';
  /** A statement that returns no rows (DDL). Parameters are bound by the engine: `{name:Type}`. */
  command(sql: string, params?: SqlParams): Promise<void>;
  /** A SELECT; each row is one JSONEachRow object. */
  query<Row>(sql: string, params?: SqlParams): Promise<Row[]>;
  /** Inserts rows (objects keyed by column name) as JSONEachRow, with INSERT_SETTINGS. */
  insert(table: string, rows: readonly object[]): Promise<void>;
  /**
   * Whether the engine answers. On a server this goes over a connection of its own: a
   * readiness probe must not queue behind the requests' queries, or a busy gateway reads
   * as down and a load balancer takes the last one out of rotation.
   */
  ping(): Promise<void>;
  close(): Promise<void>;
}
