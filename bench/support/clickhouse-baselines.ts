/**
 * What ClickHouse itself does with the ingest scenario's topic and rows, on the run's
 * server: its own Kafka table engine, and the rows inserted already encoded.
 */
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import type { CanonicalEvent } from '../../src/generated/schema-types.js';
import { storableEvent } from '../../src/store/event-rows.js';
import { eventRowText } from '../../src/store/event-row-text.js';
import { INSERT_SETTINGS, jsonEachRowBody } from '../../src/store/sql-transport.js';
import { waitFor } from '../../test/support/wait-for.js';

/** ClickHouse's Kafka engine at its defaults (one consumer), and as tuned: two consumers, a thread each. */
export const ENGINE_VARIANTS = {
  default: { consumers: 1, threadPerConsumer: 0 },
  tuned: { consumers: 2, threadPerConsumer: 1 },
} as const;
export type EngineVariant = keyof typeof ENGINE_VARIANTS;

/** The store's columns the engine reads from a message: every column of `events` but the one the table fills itself. */
async function messageColumns(ch: ClickHouseClient, productDb: string): Promise<string> {
  const result = await ch.query({
    query: `SELECT name, type FROM system.columns WHERE database = {db:String} AND table = 'events' AND default_kind = '' ORDER BY position`,
    query_params: { db: productDb },
    format: 'JSONEachRow',
  });
  const columns = await result.json<{ name: string; type: string }>();
  return columns.map((c) => `${c.name} ${c.type}`).join(', ');
}

/** count() and a checksum of the distinct events, to show two tables hold the same events. */
async function contents(ch: ClickHouseClient, table: string): Promise<string> {
  const result = await ch.query({
    query: `SELECT count() AS events, sum(h) AS checksum FROM (SELECT DISTINCT cityHash64(org_id, project_id, occurred_at, id, device_id, payload) AS h FROM ${table})`,
    format: 'JSONEachRow',
  });
  return JSON.stringify(await result.json());
}

/**
 * Events/s of ClickHouse's Kafka engine reading the topic into a copy of the product's
 * `events` table (`CREATE TABLE … AS events`: the same engine, indexes and projection)
 * through a materialized view, on the same server: every event over the time from the
 * view's creation (when the engine starts consuming) to the moment the copy holds them
 * all, polled every 100 ms. The engine writes in blocks of up to a million rows or 7.5 s,
 * so a rate from its first stored row would leave out most of its time. The copy must
 * then hold the same events as the product's table, or the figure is not comparable and
 * the run fails.
 */
export async function kafkaEngineRate(options: {
  readonly url: string;
  readonly brokers: readonly string[];
  readonly topic: string;
  readonly productDb: string;
  readonly db: string;
  readonly variant: EngineVariant;
  readonly total: number;
}): Promise<number> {
  const { consumers, threadPerConsumer } = ENGINE_VARIANTS[options.variant];
  const ch = createClient({ url: options.url });
  const copy = `${options.db}.events_${options.variant}`;
  const queue = `${options.db}.queue_${options.variant}`;
  const view = `${options.db}.mv_${options.variant}`;
  try {
    await ch.command({ query: `CREATE DATABASE IF NOT EXISTS ${options.db}` });
    await ch.command({ query: `CREATE TABLE ${copy} AS ${options.productDb}.events` });
    // Typed columns read straight from each message, timestamps best-effort: the engine's cheapest path for these events.
    await ch.command({
      query: `CREATE TABLE ${queue} (${await messageColumns(ch, options.productDb)}) ENGINE = Kafka SETTINGS
        kafka_broker_list = '${options.brokers.join(',')}', kafka_topic_list = '${options.topic}',
        kafka_group_name = '${options.db}_${options.variant}', kafka_format = 'JSONEachRow',
        kafka_num_consumers = ${consumers}, kafka_thread_per_consumer = ${threadPerConsumer},
        date_time_input_format = 'best_effort', input_format_json_read_objects_as_strings = 1`,
    });
    const startedAt = Date.now();
    await ch.command({ query: `CREATE MATERIALIZED VIEW ${view} TO ${copy} AS SELECT * FROM ${queue}` });
    const last = await waitFor(
      `the Kafka engine (${options.variant}) to store ${options.total} events`,
      async () => {
        const result = await ch.query({ query: `SELECT count() AS n FROM ${copy}`, format: 'JSONEachRow' });
        const count = Number((await result.json<{ n: string }>())[0]!.n);
        return count >= options.total ? Date.now() : undefined;
      },
      30 * 60_000,
      100,
    );
    // A Kafka table consumes for as long as it exists; the next variant must have the broker to itself.
    await ch.command({ query: `DROP VIEW ${view}` });
    await ch.command({ query: `DROP TABLE ${queue}` });
    const [ours, theirs] = [await contents(ch, `${options.productDb}.events`), await contents(ch, copy)];
    if (ours !== theirs) throw new Error(`the Kafka engine's copy holds ${theirs}, the product's table ${ours}: not the same events`);
    return Math.round(options.total / ((last - startedAt) / 1000));
  } finally {
    await ch.command({ query: `DROP DATABASE IF EXISTS ${options.db}` }).catch(() => undefined);
    await ch.close();
  }
}

/**
 * Rows/s of the server taking the same events already encoded as the consumer encodes
 * them (each event's own JSON text), in batches of `batchSize`, one request at a time,
 * into a copy of the product's table: what the server can take, with no Kafka and no
 * JavaScript in the timed part.
 */
export async function preEncodedInsertRate(options: {
  readonly url: string;
  readonly productDb: string;
  readonly db: string;
  readonly events: readonly CanonicalEvent[];
  readonly batchSize: number;
}): Promise<number> {
  const bodies: Buffer[] = [];
  for (let i = 0; i < options.events.length; i += options.batchSize) {
    const rows = options.events.slice(i, i + options.batchSize).map((e) => eventRowText({ ...storableEvent(e), json: Buffer.from(JSON.stringify(e)) }));
    bodies.push(jsonEachRowBody(rows));
  }
  const ch = createClient({ url: options.url });
  const copy = `${options.db}.events_pre_encoded`;
  try {
    await ch.command({ query: `CREATE DATABASE IF NOT EXISTS ${options.db}` });
    await ch.command({ query: `CREATE TABLE ${copy} AS ${options.productDb}.events` });
    const insert = new URL(options.url);
    insert.searchParams.set('query', `INSERT INTO ${copy} FORMAT JSONEachRow`);
    for (const [name, value] of Object.entries(INSERT_SETTINGS)) insert.searchParams.set(name, String(value));
    const started = process.hrtime.bigint();
    for (const body of bodies) {
      const res = await fetch(insert, { method: 'POST', body });
      if (!res.ok) throw new Error(`pre-encoded insert failed: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
    }
    return Math.round(options.events.length / (Number(process.hrtime.bigint() - started) / 1e9));
  } finally {
    await ch.command({ query: `DROP DATABASE IF EXISTS ${options.db}` }).catch(() => undefined);
    await ch.close();
  }
}
