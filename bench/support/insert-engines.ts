/**
 * What each store takes when the consumer's work is already done: the same batches of
 * 50,000 events, each its own JSON text as the consumer writes it, inserted into chDB and
 * into a ClickHouse server started for the purpose, each opened as the product opens it,
 * one insert at a time and two at a time (the consumer keeps two in flight). chDB runs
 * one query at a time per process, so the second insert waits for the first; the server
 * runs both at once. Prints one JSON line per store and concurrency, ROUNDS times.
 *   node --import tsx bench/support/insert-engines.ts [BATCHES] [ROUNDS]
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/config.js';
import { openStore } from '../../src/runtime/store-runtime.js';
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
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < batches.length) await transport.insert('events', batches[next++]!);
    }),
  );
  return Math.round((BATCH * batches.length) / ((performance.now() - started) / 1000));
}

/** Opens the store `env` configures, with its tables migrated, and prints its insert rate. */
async function measure(store: string, concurrency: number, env: Record<string, string>): Promise<void> {
  const transport = await openStore(loadConfig({ AUTH_JWT_SECRET: 'x'.repeat(32), ...env }));
  try {
    console.log(JSON.stringify({ store, concurrency, rowsPerSecond: await insertRate(transport, concurrency) }));
  } finally {
    await transport.close();
  }
}

const server = await startClickHouseServer();
try {
  for (let round = 0; round < Number(rounds); round++) {
    for (const concurrency of [1, 2]) {
      const dir = mkdtempSync(join(tmpdir(), 'insert-engines-'));
      try {
        await measure('chdb', concurrency, { DATA_DIR: dir });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      await measure('clickhouse-server', concurrency, {
        CLICKHOUSE_URL: server.url,
        CLICKHOUSE_DATABASE: `insert_engines_${round}_${concurrency}`,
        CLICKHOUSE_REQUEST_TIMEOUT_MS: '120000',
      });
    }
  }
} finally {
  await server.stop();
}
