import type { SqlParams, SqlTransport } from '../../src/store/sql-transport.js';
import { clickhouseException } from '../../src/store/store-errors.js';

/** A store transport that keeps what went through it. */
export interface RecordingTransport extends SqlTransport {
  /** Every query's statement, in the order sent: what reads cost in round trips, and their shape. */
  readonly sent: string[];
  /** Each query's parameters, in step with `sent`. */
  readonly params: (SqlParams | undefined)[];
  /** The engine's code of each query that failed (-1 when the error carried none). */
  readonly failed: number[];
  /** Forgets what was sent and failed so far. */
  clear(): void;
}

export function recordingTransport(sql: SqlTransport): RecordingTransport {
  const sent: string[] = [];
  const sentParams: (SqlParams | undefined)[] = [];
  const failed: number[] = [];
  return {
    ...sql,
    sent,
    params: sentParams,
    failed,
    clear() {
      sent.length = 0;
      sentParams.length = 0;
      failed.length = 0;
    },
    async query(text, params, options) {
      sent.push(text);
      sentParams.push(params);
      try {
        return await sql.query(text, params, options);
      } catch (error) {
        failed.push(clickhouseException(error)?.code ?? -1);
        throw error;
      }
    },
  };
}

/** A batch of page reads names its second read's parameters r1_…: a read alone never does. */
export const isBatchOfReads = (statement: string): boolean => statement.includes('{r1_org_id:UUID}');
