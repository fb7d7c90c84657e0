/**
 * What ClickHouse itself does with the ingest scenario's topic and rows, on the run's
 * server: its own Kafka table engine, and the rows inserted already encoded.
 */
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import type { CanonicalEvent } from '../../src/generated/schema-types.js';
import { storableEvent } from '../../src/store/event-rows.js';
import { eventRowText } from '../../src/store/event-row-text.js';
import { INSERT_SETTINGS, jsonEachRowBody } from '../../src/store/sql-transport.js';

/**
 * One configuration of ClickHouse's Kafka engine. What is left out keeps the engine's
 * default: kafka_max_block_size = max_insert_block_size (about a million rows),
 * kafka_flush_interval_ms = stream_flush_interval_ms (7.5 s), kafka_poll_max_batch_size =
 * the block size, kafka_poll_timeout_ms = stream_poll_timeout_ms (500 ms).
 */
export interface EngineConfig {
  readonly consumers: number;
  readonly threadPerConsumer: 0 | 1;
  readonly maxBlockSize?: number;
  readonly flushIntervalMs?: number;
  readonly pollMaxBatchSize?: number;
  readonly pollTimeoutMs?: number;
}

const SETTING_NAMES: Readonly<Record<keyof EngineConfig, string>> = {
  consumers: 'kafka_num_consumers',
  threadPerConsumer: 'kafka_thread_per_consumer',
  maxBlockSize: 'kafka_max_block_size',
  flushIntervalMs: 'kafka_flush_interval_ms',
  pollMaxBatchSize: 'kafka_poll_max_batch_size',
  pollTimeoutMs: 'kafka_poll_timeout_ms',
};

function engineSettings(config: EngineConfig): string[] {
  return (Object.keys(SETTING_NAMES) as (keyof EngineConfig)[]).filter((k) => config[k] !== undefined).map((k) => `${SETTING_NAMES[k]} = ${config[k]}`);
}

/** "kafka_num_consumers = 2, kafka_thread_per_consumer = 1, kafka_max_block_size = 65536 (others at their defaults)". */
export function describeEngine(config: EngineConfig): string {
  const set = engineSettings(config);
  return `${set.join(', ')}${set.length < Object.keys(SETTING_NAMES).length ? ' (others at their defaults)' : ''}`;
}

/**
 * The throughput settings swept once per run, a coarse grid: the defaults; two consumers,
 * a thread each (this machine has two cores; the engine refuses more consumers than
 * cores); blocks and flushes from the ones users pick for throughput (64 Ki rows, 0.5 s)
 * to the defaults' million rows and 7.5 s; a poll batch smaller than the block.
 */
export const ENGINE_SWEEP: readonly EngineConfig[] = [
  { consumers: 1, threadPerConsumer: 0 },
  { consumers: 2, threadPerConsumer: 1 },
  { consumers: 1, threadPerConsumer: 1, maxBlockSize: 65_536, flushIntervalMs: 500 },
  { consumers: 2, threadPerConsumer: 1, maxBlockSize: 65_536, flushIntervalMs: 500 },
  { consumers: 2, threadPerConsumer: 1, maxBlockSize: 262_144, flushIntervalMs: 1000 },
  { consumers: 2, threadPerConsumer: 1, maxBlockSize: 262_144, flushIntervalMs: 1000, pollMaxBatchSize: 16_384 },
  { consumers: 2, threadPerConsumer: 0, maxBlockSize: 262_144, flushIntervalMs: 1000 },
];

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

export interface EngineTarget {
  readonly brokers: readonly string[];
  readonly topic: string;
  /** The product's database: its `events` table is copied (`CREATE TABLE … AS events`: the same engine, indexes and projection). */
  readonly productDb: string;
  /** The database of the engine's tables; created when missing. */
  readonly db: string;
  /** Distinct per run of the engine within `db`. */
  readonly name: string;
}

/**
 * ClickHouse's Kafka engine reading `topic` through a materialized view into
 * `<db>.events_<name>`, from the topic's start. `startedAt` is just before the view's
 * creation, when the engine starts consuming. stop() drops the view and the Kafka table:
 * a Kafka table consumes for as long as it exists, and the next run must have the
 * broker and the server to itself.
 */
export async function startKafkaEngine(ch: ClickHouseClient, target: EngineTarget, config: EngineConfig): Promise<{ readonly copy: string; readonly startedAt: number; stop(): Promise<void> }> {
  const copy = `${target.db}.events_${target.name}`;
  const queue = `${target.db}.queue_${target.name}`;
  const view = `${target.db}.mv_${target.name}`;
  await ch.command({ query: `CREATE DATABASE IF NOT EXISTS ${target.db}` });
  await ch.command({ query: `CREATE TABLE ${copy} AS ${target.productDb}.events` });
  // Typed columns read straight from each message, timestamps best-effort: the engine's cheapest path for these events.
  await ch.command({
    query: `CREATE TABLE ${queue} (${await messageColumns(ch, target.productDb)}) ENGINE = Kafka SETTINGS
      kafka_broker_list = '${target.brokers.join(',')}', kafka_topic_list = '${target.topic}',
      kafka_group_name = '${target.db}_${target.name}', kafka_format = 'JSONEachRow',
      ${engineSettings(config).join(', ')},
      date_time_input_format = 'best_effort', input_format_json_read_objects_as_strings = 1`,
  });
  const startedAt = Date.now();
  await ch.command({ query: `CREATE MATERIALIZED VIEW ${view} TO ${copy} AS SELECT * FROM ${queue}` });
  return {
    copy,
    startedAt,
    async stop() {
      await ch.command({ query: `DROP VIEW IF EXISTS ${view}` });
      await ch.command({ query: `DROP TABLE IF EXISTS ${queue}` });
    },
  };
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
