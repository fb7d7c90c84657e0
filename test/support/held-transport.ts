import type { SqlParams, SqlTransport } from '../../src/store/sql-transport.js';

/** One statement a held transport was sent, answered or failed when the test says. */
export interface HeldStatement {
  readonly sql: string;
  readonly params: SqlParams;
  readonly answer: (rows: unknown[]) => void;
  readonly fail: (error: unknown) => void;
}

/** A store transport whose answers the test gives, one statement at a time, in the order they were sent. */
export function heldTransport(): { transport: SqlTransport; statements: HeldStatement[] } {
  const statements: HeldStatement[] = [];
  const transport: Pick<SqlTransport, 'query'> = {
    query: <Row>(sql: string, params?: SqlParams) =>
      new Promise<Row[]>((resolve, reject) => {
        statements.push({ sql, params: params ?? {}, answer: (rows) => resolve(rows as Row[]), fail: reject });
      }),
  };
  return { transport: transport as SqlTransport, statements };
}
