/**
 * What each store takes when the consumer's work is already done: the same batches of
 * 50,000 events, each its own JSON text as the consumer writes it, inserted through the
 * product's own transports into chDB and into a ClickHouse server started for the
 * purpose, one insert at a time and two at a time (the consumer keeps two in flight). chDB runs one query at a
 * time per process, so the second insert waits for the first; the server runs both at
 * once. Prints one JSON line per store and concurrency, ROUNDS times.
 *   node --import tsx bench/support/insert-engines.ts [BATCHES] [ROUNDS]
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClickHouseConfig } from '../../src/config/config.js';
import { createChdbTransport } from '../../src/store/chdb-transport.js';
import { createClickHouseServerTransport } from '../../src/store/clickhouse-server-transport.js';
import { migrate } from '../../src/store/migrations.js';
import type { JsonRowText, SqlTransport } from '../../src/store/sql-transport.js';
import { startClickHouseServer } from '../../test/support/clickhouse-server.js';
import { telemetry } from './bench-events.js';

const BATCH = 50_000;
const [batchCount = '10', rounds = '2'] = process.argv.slice(2);
const batches: JsonRowText[][] = Array.from({ length: Number(batchCount) }, () =>
  // Each event's own JSON text: what the consumer writes for an event the byte validator checked.
  telemetry(BATCH, randomUUID(), randomUUID()).map((event) => Buffer.from(JSON.stringify(event))),
);

/** Rows per second of every batch inserted, `concurrency` inserts in flight. */
async function insertRate(transport: SqlTransport, concurrency: number): Promise<number> {
  await migrate(transport);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < batches.length) await transport.insert('events', batches[next++]!);
    }),
  );
  return Math.round((BATCH * batches.length) / ((performance.now() - started) / 1000));
}

const server = await startClickHouseServer();
const serverConfig = (database: string): ClickHouseConfig => ({
  url: server.url,
  username: undefined,
  password: undefined,
  ca: undefined,
  database,
  requestTimeoutMs: 120_000,
  cluster: undefined,
  idempotencyStore: 'table',
});
try {
  for (let round = 0; round < Number(rounds); round++) {
    for (const concurrency of [1, 2]) {
      const dir = mkdtempSync(join(tmpdir(), 'insert-engines-'));
      const chdb = createChdbTransport({ path: dir });
      try {
        console.log(JSON.stringify({ store: 'chdb', concurrency, rowsPerSecond: await insertRate(chdb, concurrency) }));
      } finally {
        await chdb.close();
        rmSync(dir, { recursive: true, force: true });
      }
      const onServer = await createClickHouseServerTransport(serverConfig(`insert_engines_${round}_${concurrency}`));
      try {
        console.log(JSON.stringify({ store: 'clickhouse-server', concurrency, rowsPerSecond: await insertRate(onServer, concurrency) }));
      } finally {
        await onServer.close();
      }
    }
  }
} finally {
  await server.stop();
}
