import { mkdirSync } from 'node:fs';
import { Session } from 'chdb';
import { createGroupCommit, type GroupCommit } from '../concurrency/group-commit.js';
import { INSERT_SETTINGS, jsonEachRowBody, type JsonRowText, type SqlParams, type SqlTransport } from './sql-transport.js';
import { toStoreError } from './store-errors.js';
import { rowRefusal } from './store-refusal.js';

export interface ChdbTransportOptions {
  /** Data directory; one process owns it (chDB binds one directory per process). */
  readonly path: string;
}

/**
 * ClickHouse in-process through chDB. The engine runs one query at a time per process,
 * so concurrent inserts into the same table are coalesced into one INSERT (group
 * commit): under load the embedded gateway writes a few large blocks instead of many
 * one-row parts, and each caller still returns only once its rows are stored.
 */
export function createChdbTransport(options: ChdbTransportOptions): SqlTransport {
  mkdirSync(options.path, { recursive: true });
  const session = new Session(options.path);
  const writers = new Map<string, GroupCommit<JsonRowText>>();

  function writerFor(table: string): GroupCommit<JsonRowText> {
    let writer = writers.get(table);
    if (writer === undefined) {
      // One caller's refused row must not fail the others' rows that shared its INSERT.
      const isolate = (error: unknown) => rowRefusal(error) !== undefined;
      writer = createGroupCommit<JsonRowText>(
        async (rows) => {
          await session.insert({ table, values: jsonEachRowBody(rows), format: 'JSONEachRow', settings: INSERT_SETTINGS });
        },
        { isolate },
      );
      writers.set(table, writer);
    }
    return writer;
  }

  return {
    kind: 'chdb',
    async command(sql, params) {
      try {
        if (params === undefined) await session.queryAsync(sql);
        else await session.queryBindAsync(sql, params);
      } catch (error) {
        throw toStoreError(error, 'command');
      }
    },
    async query<Row>(sql: string, params?: SqlParams): Promise<Row[]> {
      try {
        const result =
          params === undefined
            ? await session.queryAsync(sql, { format: 'JSONEachRow' })
            : await session.queryBindAsync(sql, params, { format: 'JSONEachRow' });
        const text = result.text();
        if (text.trim() === '') return [];
        return text
          .trimEnd()
          .split('\n')
          .map((line) => JSON.parse(line) as Row);
      } catch (error) {
        throw toStoreError(error, 'query');
      }
    },
    async insert(table, rows) {
      if (rows.length === 0) return;
      try {
        await writerFor(table).write(rows);
      } catch (error) {
        throw toStoreError(error, 'insert');
      }
    },
    async ping() {
      try {
        await session.queryAsync('SELECT 1');
      } catch (error) {
        throw toStoreError(error, 'ping');
      }
    },
    async close() {
      await Promise.all([...writers.values()].map((w) => w.drain()));
      session.close();
    },
  };
}
