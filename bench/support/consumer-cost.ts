/**
 * The consumer's own CPU per event, with neither Kafka nor a server on the machine: the
 * ingestor and the store as the consumer runs them (validation, the copy fold, the span
 * rows, each insert's body), over batches of 50,000 messages shaped as kafkajs hands them
 * over (each value a view of one fetch's buffer, wrapped as the consumer wraps it). The
 * store's transport builds every body as the server transport does and sends nothing.
 * What Kafka and the server cost is the ingest scenario's to measure; this part is the
 * one a change of ours moves, and on a shared machine a whole ingest run cannot tell a
 * few percent of it from the machine's drift, while this process's CPU time (its GC
 * threads' included) mostly can. Each fetch is built, the garbage of building it
 * collected, and only then is its ingestion timed, one fetch alive at a time as in the
 * consumer. The first round warms the code up and is not counted; the median of the
 * others is. PROJECTS spreads each fetch over that many projects (ten to an organization),
 * their events interleaved as a topic shared by many tenants delivers them: the span rows
 * and the copy fold grow with the projects of a batch, not only with its events.
 *   node --expose-gc --import tsx bench/support/consumer-cost.ts [COUNT] [ROUNDS] [PROJECTS]
 */
import { randomUUID } from 'node:crypto';
import type { KafkaMessage } from 'kafkajs';
import { ConsumedMessage } from '../../src/ingest/consumed-message.js';
import { createEventIngestor } from '../../src/ingest/event-ingestor.js';
import { createSchemaRegistry } from '../../src/schemas/schema-registry.js';
import { createClickHouseEventStore } from '../../src/store/clickhouse-event-store.js';
import { jsonEachRowBody, type SqlTransport } from '../../src/store/sql-transport.js';
import { telemetry } from './bench-events.js';

const BATCH = 50_000;
const [count, rounds, projects] = [Number(process.argv[2] ?? 500_000), Number(process.argv[3] ?? 6), Number(process.argv[4] ?? 1)];
if (!(count >= BATCH && rounds >= 2)) throw new Error(`COUNT (${count}) must be at least ${BATCH} and ROUNDS (${rounds}) at least 2: the first round is a warm-up`);
if (!(Number.isInteger(projects) && projects >= 1 && BATCH % projects === 0)) throw new Error(`PROJECTS (${projects}) must be a whole number that divides ${BATCH}`);
const collect = globalThis.gc;
if (collect === undefined) throw new Error('run with --expose-gc: the garbage of building each fetch must be collected before its ingestion is timed');

/** A fetch as kafkajs decodes it: one buffer, each value a view of it. */
function fetched(offset: number): ConsumedMessage[] {
  const orgs = Array.from({ length: Math.ceil(projects / 10) }, () => randomUUID());
  const perProject = Array.from({ length: projects }, (_, p) => telemetry(BATCH / projects, orgs[Math.floor(p / 10)]!, randomUUID()));
  const texts = Array.from({ length: BATCH }, (_, i) => Buffer.from(JSON.stringify(perProject[i % projects]![Math.floor(i / projects)])));
  const fetch = Buffer.concat(texts);
  let at = 0;
  return texts.map((text, i) => {
    const value = fetch.subarray(at, (at += text.length));
    const message: KafkaMessage = { key: null, value, timestamp: '0', attributes: 0, offset: String(offset + i), headers: {} };
    return new ConsumedMessage('canonical-event', message, 'bench.events', 0);
  });
}

let bodyBytes = 0;
const transport: SqlTransport = {
  kind: 'clickhouse-server',
  command: async () => undefined,
  query: async () => [],
  async insert(_table, rows) {
    bodyBytes += jsonEachRowBody(rows).length;
  },
  ping: async () => undefined,
  close: async () => undefined,
};
const ingestor = createEventIngestor({ store: createClickHouseEventStore(transport), schemas: createSchemaRegistry() });

const batches = Math.ceil(count / BATCH);
const perEvent: number[] = [];
for (let round = 0; round < rounds; round++) {
  let cpu = 0;
  let events = 0;
  for (let b = 0; b < batches; b++) {
    // Built fresh each time, as every fetch is: strings the run has hashed before would flatter it.
    const messages = fetched(b * BATCH);
    collect();
    const before = process.cpuUsage();
    const { stored, rejected } = await ingestor.ingestMessages(messages);
    const used = process.cpuUsage(before);
    if (stored !== messages.length || rejected.length > 0) throw new Error(`stored ${stored} of ${messages.length}, ${rejected.length} rejected`);
    cpu += used.user + used.system;
    events += stored;
  }
  const micros = cpu / events;
  console.log(JSON.stringify({ round, events, cpuMicrosPerEvent: Number(micros.toFixed(2)), warmUp: round === 0 }));
  if (round > 0) perEvent.push(micros);
}
perEvent.sort((a, b) => a - b);
const median = perEvent[Math.floor(perEvent.length / 2)]!;
console.log(`consumer's own CPU per event, median of ${perEvent.length} rounds: ${median.toFixed(2)} µs (bodies ${(bodyBytes / 2 ** 20).toFixed(0)} MiB in all)`);
