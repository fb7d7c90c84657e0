/**
 * What the ClickHouse server spends on an insert of the events table, by the format and
 * settings of its body: the same COUNT events (the consumer's batches of 50,000, each
 * event its own JSON text) inserted one batch at a time as JSONEachRow with the product's
 * settings (INSERT_SETTINGS), as JSONEachRow parsed in parallel (the engine's default),
 * and as RowBinary and Native, the binary bodies encoded by the server itself from the
 * stored rows so that no encoder of ours is measured. Each variant writes a fresh copy of
 * the product's table with its merges stopped (a faster variant would otherwise leave
 * more of its merges outside its window), once the server's other merges have settled,
 * the variants taking turns for ROUNDS rounds so that the machine's drift falls on each.
 * The server's CPU is read from /proc around each variant; the client is this process,
 * and its CPU is not counted. Prints one JSON line per round and variant, then each
 * variant's mean server CPU per event and wall time over the product's.
 *   node --import tsx bench/support/insert-format-cost.ts [COUNT] [ROUNDS]
 */
import { randomUUID } from 'node:crypto';
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import { storableEvent } from '../../src/store/event-rows.js';
import { eventRowText } from '../../src/store/event-row-text.js';
import { migrationStatements } from '../../src/store/migrations.js';
import { INSERT_SETTINGS, jsonEachRowBody } from '../../src/store/sql-transport.js';
import { startClickHouseServer } from '../../test/support/clickhouse-server.js';
import { telemetry } from './bench-events.js';
import { cpuSeconds, listenerPid, portOf } from './process-cpu.js';
import { mergesSettled } from './stored-rows.js';

const BATCH = 50_000;
const [count = '1000000', rounds = '3'] = process.argv.slice(2);
/** Every column but ingested_at, which the table fills as it does for the consumer. */
const COLUMNS = 'org_id, project_id, occurred_at, id, domain, entity, action, correlation_id, device_id, fleet_id, payload, source_service, span_id, trace_id';

interface Variant {
  readonly format: 'JSONEachRow' | 'RowBinary' | 'Native';
  readonly settings: Readonly<Record<string, string | number>>;
  readonly bodies: () => readonly Buffer[];
}

const events = telemetry(Number(count), randomUUID(), randomUUID());
const json: Buffer[] = [];
for (let i = 0; i < events.length; i += BATCH) json.push(jsonEachRowBody(events.slice(i, i + BATCH).map((e) => eventRowText(storableEvent(e)))));
const binary: Record<'RowBinary' | 'Native', Buffer[]> = { RowBinary: [], Native: [] };
const partitions = { max_partitions_per_insert_block: INSERT_SETTINGS.max_partitions_per_insert_block };

const VARIANTS: Readonly<Record<string, Variant>> = {
  'JSONEachRow, the product settings': { format: 'JSONEachRow', settings: INSERT_SETTINGS, bodies: () => json },
  'JSONEachRow, parsed in parallel': { format: 'JSONEachRow', settings: { ...INSERT_SETTINGS, input_format_parallel_parsing: 1 }, bodies: () => json },
  RowBinary: { format: 'RowBinary', settings: partitions, bodies: () => binary.RowBinary },
  Native: { format: 'Native', settings: partitions, bodies: () => binary.Native },
};

async function post(url: string, query: string, body: Buffer | string, settings: Readonly<Record<string, string | number>> = {}): Promise<Buffer> {
  const params = new URLSearchParams({ query, ...Object.fromEntries(Object.entries(settings).map(([k, v]) => [k, String(v)])) });
  const res = await fetch(`${url}/?${params.toString()}`, { method: 'POST', body });
  const answer = Buffer.from(await res.arrayBuffer());
  if (!res.ok) throw new Error(`${query.slice(0, 80)}: ${res.status} ${answer.toString().slice(0, 500)}`);
  return answer;
}

async function rows(ch: ClickHouseClient, table: string): Promise<number> {
  const result = await ch.query({ query: `SELECT count() AS n FROM ${table}`, format: 'JSONEachRow' });
  return Number((await result.json<{ n: string }>())[0]!.n);
}

const server = await startClickHouseServer();
const ch = createClient({ url: server.url, request_timeout: 300_000 });
try {
  const pid = listenerPid(portOf(server.url));
  for (const statement of migrationStatements({ kind: 'single' })) await ch.command({ query: statement });
  // The binary bodies: the server's own encoding of the same rows, batch by batch.
  for (const body of json) await post(server.url, 'INSERT INTO events FORMAT JSONEachRow', body, INSERT_SETTINGS);
  const stored = `(SELECT ${COLUMNS}, row_number() OVER (ORDER BY occurred_at, id) AS n FROM events)`;
  for (let i = 0; i < json.length; i++) {
    for (const format of ['RowBinary', 'Native'] as const) {
      binary[format].push(await post(server.url, `SELECT ${COLUMNS} FROM ${stored} WHERE n > ${i * BATCH} AND n <= ${(i + 1) * BATCH} FORMAT ${format}`, ''));
    }
  }
  const results: Record<string, { micros: number[]; seconds: number[] }> = {};
  for (let round = 0; round < Number(rounds); round++) {
    for (const [name, variant] of Object.entries(VARIANTS)) {
      const table = `copy_${round}_${variant.format}_${Object.keys(results).length}_${randomUUID().slice(0, 8)}`;
      await ch.command({ query: `CREATE TABLE ${table} AS events` });
      await ch.command({ query: `SYSTEM STOP MERGES ${table}` });
      await mergesSettled(ch);
      const cpuBefore = cpuSeconds(pid);
      const started = performance.now();
      for (const body of variant.bodies()) await post(server.url, `INSERT INTO ${table} (${COLUMNS}) FORMAT ${variant.format}`, body, variant.settings);
      const seconds = (performance.now() - started) / 1000;
      const micros = ((cpuSeconds(pid) - cpuBefore) * 1e6) / events.length;
      const held = await rows(ch, table);
      if (held !== events.length) throw new Error(`${name}: the copy holds ${held} rows of ${events.length}`);
      await ch.command({ query: `DROP TABLE ${table} SYNC` });
      (results[name] ??= { micros: [], seconds: [] }).micros.push(micros);
      results[name].seconds.push(seconds);
      console.log(JSON.stringify({ round, variant: name, serverMicrosPerEvent: Number(micros.toFixed(2)), seconds: Number(seconds.toFixed(2)) }));
    }
  }
  const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const product = results['JSONEachRow, the product settings']!;
  for (const [name, r] of Object.entries(results)) {
    console.log(
      JSON.stringify({
        variant: name,
        serverMicrosPerEvent: Number(mean(r.micros).toFixed(2)),
        cpuOverProduct: Number((mean(r.micros) / mean(product.micros)).toFixed(3)),
        timeOverProduct: Number((mean(r.seconds) / mean(product.seconds)).toFixed(3)),
      }),
    );
  }
} finally {
  await ch.close();
  await server.stop();
}
