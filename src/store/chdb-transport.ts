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
  // Queries the engine is running: a session closed under one takes the process down with
  // a signal (seen when a start failed while the first-page watch was polling), so close
  // waits for them. A caller that stopped waiting for one (a loop told to stop) has not
  // stopped the engine.
  const running = new Set<Promise<unknown>>();
  const tracked = <T>(query: Promise<T>): Promise<T> => {
    running.add(query);
    const untrack = () => running.delete(query);
    query.then(untrack, untrack);
    return query;
  };

  function writerFor(table: string): GroupCommit<JsonRowText> {
    let writer = writers.get(table);
    if (writer === undefined) {
      // One caller's refused row must not fail the others' rows that shared its INSERT.
      const isolate = (error: unknown) => rowRefusal(error) !== undefined;
      writer = createGroupCommit<JsonRowText>(
        async (rows) => {
          await tracked(session.insert({ table, values: jsonEachRowBody(rows), format: 'JSONEachRow', settings: INSERT_SETTINGS }));
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
        if (params === undefined) await tracked(session.queryAsync(sql));
        else await tracked(session.queryBindAsync(sql, params));
      } catch (error) {
        throw toStoreError(error, 'command');
      }
    },
    async query<Row>(sql: string, params?: SqlParams): Promise<Row[]> {
      try {
        const result =
          params === undefined
            ? await tracked(session.queryAsync(sql, { format: 'JSONEachRow' }))
            : await tracked(session.queryBindAsync(sql, params, { format: 'JSONEachRow' }));
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
        await tracked(session.queryAsync('SELECT 1'));
      } catch (error) {
        throw toStoreError(error, 'ping');
      }
    },
    async close() {
      await Promise.all([...writers.values()].map((w) => w.drain()));
      while (running.size > 0) await Promise.allSettled([...running]);
      session.close();
    },
  };
}
