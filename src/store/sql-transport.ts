/**
 * The one seam between our SQL and a ClickHouse engine. The event store, the
 * idempotency store and the command log speak only this; chDB (in-process) and a
 * ClickHouse server (HTTP) are interchangeable behind it and run the same statements.
 */
/** Arrays bind to `{name:Array(T)}` placeholders; both engines' clients format them. */
export type SqlParam = string | number | boolean | null | readonly string[];
export type SqlParams = Readonly<Record<string, SqlParam>>;

export interface SqlTransport {
  /** Which engine answers; for logs and readiness, never for branching SQL. */
  readonly kind: 'chdb' | 'clickhouse-server';
  /** A statement that returns no rows (DDL). Parameters are bound by the engine: `{name:Type}`. */
  command(sql: string, params?: SqlParams): Promise<void>;
  /** A SELECT; each row is one JSONEachRow object. */
  query<Row>(sql: string, params?: SqlParams): Promise<Row[]>;
  /** Inserts rows (objects keyed by column name) as JSONEachRow. */
  insert(table: string, rows: readonly object[]): Promise<void>;
  close(): Promise<void>;
}
