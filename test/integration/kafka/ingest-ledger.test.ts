import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { CompressionTypes, ConfigResourceTypes } from 'kafkajs';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import type { RejectReason } from '../../../src/ingest/event-ingestor.js';
import { KAFKA_DEFAULT_MAX_MESSAGE_BYTES } from '../../../src/kafka/message-bytes.js';
import { canonicalEvent, uuid } from '../../support/factories.js';
import { produceWithJava, type FieldMessage, type FieldProducerOptions, type TransactionEnd } from '../../support/field-producer.js';
import type { Tenant } from '../../support/test-gateway.js';
import { describeOnEachStore, topicReader, type KafkaSuite, type TopicReader } from './kafka-suite.js';
import { holdLedger, type Fate, type LedgerEntry } from './ledger.js';

/** One seed per run; LEDGER_SEED=<n> replays a run's generated messages. */
const SEED = Number(process.env['LEDGER_SEED'] ?? Date.now() % 2 ** 31);

/**
 * What a value can look like, and what must become of it: `valid` means JSON (RFC 8259) of
 * an event the schema accepts, read as JSON.parse reads it, so it must reach the feed; a
 * reason means the DLQ, with that reason.
 */
interface Shape {
  readonly name: string;
  readonly value: (e: CanonicalEvent) => Buffer | string | null;
  readonly verdict: 'valid' | RejectReason;
  /** What the stored event must hold, where the text could be read two ways. */
  readonly check?: (sent: CanonicalEvent, stored: CanonicalEvent) => string | undefined;
  /** How often the generated mixes draw it. */
  readonly weight: number;
}

const compact = (e: CanonicalEvent) => JSON.stringify(e);
const escapeAll = (text: string) => [...text].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');

const SHAPES: readonly Shape[] = [
  { name: 'compact JSON', weight: 24, verdict: 'valid', value: compact },
  // Insignificant whitespace (RFC 8259 §2) is allowed before and after the value and between tokens.
  { name: 'a trailing newline, as a log shipper sends a line', weight: 3, verdict: 'valid', value: (e) => `${compact(e)}\n` },
  { name: 'CRLF line ends', weight: 2, verdict: 'valid', value: (e) => `${JSON.stringify(e, null, 2).replaceAll('\n', '\r\n')}\r\n` },
  { name: 'whitespace padding around the value', weight: 2, verdict: 'valid', value: (e) => ` \t\r\n ${compact(e)} \n\t ` },
  { name: 'pretty-printed, with blank lines inside', weight: 2, verdict: 'valid', value: (e) => JSON.stringify(e, null, 2).split('\n').join('\n\n') },
  // RFC 8259 §8.1: a parser may ignore a byte order mark; a producer's framework may add one.
  { name: 'a leading UTF-8 BOM', weight: 2, verdict: 'valid', value: (e) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(compact(e))]) },
  { name: 'an escaped UUID', weight: 2, verdict: 'valid', value: (e) => compact(e).replace(`"id":"${e.id}"`, `"id":"${escapeAll(e.id)}"`) },
  { name: 'an upper-case UUID', weight: 1, verdict: 'valid', value: (e) => JSON.stringify({ ...e, id: e.id.toUpperCase() }) },
  { name: 'a payload string holding escaped line breaks', weight: 1, verdict: 'valid', value: (e) => JSON.stringify({ ...e, payload: { line: 'first\nsecond\r\n\n' } }) },
  {
    // JSON.parse keeps the last of a repeated member; the stored event must be what it read.
    name: 'top-level keys repeated (the last wins)',
    weight: 2,
    verdict: 'valid',
    value: (e) => `{"action":"superseded","payload":{"stale":true},${compact(e).slice(1)}`,
    check: (sent, stored) =>
      stored.action === sent.action && JSON.stringify(stored.payload) === JSON.stringify(sent.payload)
        ? undefined
        : `stored action ${stored.action} and payload ${JSON.stringify(stored.payload)}, the last ones were ${sent.action} and ${JSON.stringify(sent.payload)}`,
  },
  { name: 'a tombstone', weight: 1, verdict: 'empty-value', value: () => null },
  { name: 'an empty value', weight: 1, verdict: 'empty-value', value: () => '' },
  { name: 'a log line, not JSON', weight: 1, verdict: 'invalid-json', value: (e) => `ts=${e.occurred_at} level=info msg="reading" device=${e.device_id}\n` },
  { name: 'truncated JSON', weight: 1, verdict: 'invalid-json', value: (e) => compact(e).slice(0, 40) },
  { name: 'bytes that are not UTF-8', weight: 1, verdict: 'invalid-json', value: (e) => Buffer.concat([Buffer.from(compact(e).slice(0, -2)), Buffer.from([0xc3, 0x28, 0x22, 0x7d])]) },
  { name: 'a JSON array', weight: 1, verdict: 'schema-violation', value: (e) => JSON.stringify([e]) },
  { name: 'an event without its id', weight: 1, verdict: 'schema-violation', value: (e) => JSON.stringify({ ...e, id: undefined }) },
  { name: "a year past the store's range", weight: 1, verdict: 'timestamp-out-of-range', value: (e) => JSON.stringify({ ...e, occurred_at: '2300-01-01T00:00:00Z' }) },
];
const COMPACT = SHAPES[0]!;

/** A deterministic v4-shaped UUID, so a seed replays the same events and no two of a run collide. */
function seededUuid(...parts: readonly (string | number)[]): string {
  const h = createHash('sha256').update(parts.join('/')).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** A microsecond instant in UTC, as services write them. */
const isoMicros = (ms: number, micros: number) => new Date(ms).toISOString().replace('Z', `${String(micros).padStart(3, '0')}Z`);

const manyHeaders = (n: number): Record<string, string> => Object.fromEntries(Array.from({ length: n }, (_, i) => [`h-${i}`, `v${i}`]));

/** One message to produce, with what must become of it (a transaction's abort overrides that). */
interface Outgoing {
  readonly label: string;
  readonly key: Buffer | string | null;
  readonly value: Buffer | string | null;
  readonly headers: Record<string, Buffer | string>;
  readonly fate: Fate;
}

function outgoing(label: string, shape: Shape, event: CanonicalEvent, key: Buffer | string | null, headers: Record<string, Buffer | string> = {}): Outgoing {
  const fate: Fate =
    shape.verdict === 'valid'
      ? { kind: 'feed', event, ...(shape.check ? { check: (stored: CanonicalEvent) => shape.check!(event, stored) } : {}) }
      : { kind: 'dlq', reason: shape.verdict };
  return { label: `${label}: ${shape.name}`, key, value: shape.value(event), headers, fate };
}

interface Drawn {
  readonly shape: Shape;
  readonly device: number;
  readonly key: 'device' | 'none' | 'large';
  readonly headers: number;
  readonly at: number;
  readonly micros: number;
  readonly payloadBytes: number;
}

/** The field's mix: mostly plain events, every shape above, some large keys, now and then 2,000 headers. */
const drawn = (from: number, to: number): fc.Arbitrary<Drawn> =>
  fc.record({
    shape: fc.oneof(...SHAPES.map((shape) => ({ weight: shape.weight, arbitrary: fc.constant(shape) }))),
    device: fc.integer({ min: 0, max: 11 }),
    key: fc.oneof({ weight: 40, arbitrary: fc.constant('device' as const) }, { weight: 8, arbitrary: fc.constant('none' as const) }, { weight: 1, arbitrary: fc.constant('large' as const) }),
    headers: fc.oneof({ weight: 40, arbitrary: fc.constant(0) }, { weight: 10, arbitrary: fc.integer({ min: 1, max: 5 }) }, { weight: 1, arbitrary: fc.constant(2000) }),
    at: fc.integer({ min: from, max: to }),
    micros: fc.integer({ min: 0, max: 999 }),
    payloadBytes: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 3000 })),
  });

/** `count` generated messages of the tenant, replayable from (SEED, caseName), with occurred_at between `from` and `to`. */
function generate(tenant: Tenant, caseName: string, count: number, from = Date.parse('2025-01-01T00:00:00Z'), to = Date.parse('2026-10-31T23:59:59Z')): Outgoing[] {
  const seed = Number.parseInt(createHash('sha256').update(`${SEED}/${caseName}`).digest('hex').slice(0, 8), 16) % 2 ** 31;
  const devices = Array.from({ length: 12 }, (_, i) => seededUuid(SEED, caseName, 'device', i));
  return fc.sample(drawn(from, to), { numRuns: count, seed }).map((d, i) => {
    const event = canonicalEvent({
      id: seededUuid(SEED, caseName, i),
      org_id: tenant.orgId,
      project_id: tenant.projectId,
      device_id: devices[d.device]!,
      occurred_at: isoMicros(d.at, d.micros),
      payload: d.payloadBytes === 0 ? { temperature: d.micros % 60 } : { temperature: d.micros % 60, note: 'n'.repeat(d.payloadBytes) },
    });
    const key = d.key === 'none' ? null : d.key === 'large' ? `${event.device_id}:${'k'.repeat(100_000)}` : event.device_id!;
    return outgoing(`#${i}`, d.shape, event, key, manyHeaders(d.headers));
  });
}

/** A transaction of the given messages and how it ends; `end` absent means plain sends. */
interface Group {
  readonly messages: readonly Outgoing[];
  readonly end?: 'commit' | 'abort';
}

/** Cuts messages into transactions of 20, every third aborted. */
const inTransactions = (messages: readonly Outgoing[]): Group[] =>
  Array.from({ length: Math.ceil(messages.length / 20) }, (_, g) => ({ messages: messages.slice(g * 20, g * 20 + 20), end: g % 3 === 1 ? 'abort' : 'commit' }));

const entry = (m: Outgoing, partition: number, offset: bigint, aborted: boolean): LedgerEntry => ({
  label: aborted ? `${m.label} (aborted)` : m.label,
  partition,
  offset,
  fate: aborted ? { kind: 'aborted', ...(m.fate.kind === 'feed' ? { event: m.fate.event } : {}) } : m.fate,
});

const size = (m: Outgoing) =>
  Buffer.byteLength(m.value ?? '') + Buffer.byteLength(m.key ?? '') + Object.entries(m.headers).reduce((n, [k, v]) => n + k.length + Buffer.byteLength(v) + 4, 0);

/**
 * Produces with kafkajs, as a Node service would: keyed messages to the partition their key
 * hashes to (keyless ones round the partitions), in sends of at most 512 KB per partition so
 * no batch passes the broker's limit; in transactions where the groups say how they end.
 */
async function produceWithKafkajs(s: KafkaSuite, partitions: number, groups: readonly Group[], compression = CompressionTypes.None): Promise<LedgerEntry[]> {
  const transactional = groups.some((g) => g.end !== undefined);
  const producer = s.kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    ...(transactional ? { transactionalId: `ledger-${uuid()}` } : {}),
  });
  await producer.connect();
  const entries: LedgerEntry[] = [];
  let roundRobin = 0;
  try {
    for (const group of groups) {
      const tx = transactional ? await producer.transaction() : undefined;
      const byPartition = new Map<number, Outgoing[]>();
      for (const m of group.messages) {
        const p = m.key === null ? roundRobin++ % partitions : createHash('md5').update(m.key).digest().readUInt32BE(0) % partitions;
        byPartition.set(p, [...(byPartition.get(p) ?? []), m]);
      }
      for (const [partition, messages] of byPartition) {
        for (let i = 0; i < messages.length; ) {
          const chunk: Outgoing[] = [];
          let bytes = 0;
          while (i < messages.length && (chunk.length === 0 || bytes + size(messages[i]!) <= 512 * 1024)) {
            bytes += size(messages[i]!);
            chunk.push(messages[i++]!);
          }
          const send = { topic: s.topics.events, acks: -1, compression, messages: chunk.map((m) => ({ partition, key: m.key, value: m.value, headers: m.headers })) };
          const [sent] = tx ? await tx.send(send) : await producer.send(send);
          chunk.forEach((m, k) => entries.push(entry(m, partition, BigInt(sent!.baseOffset!) + BigInt(k), group.end === 'abort')));
        }
      }
      if (tx) await (group.end === 'abort' ? tx.abort() : tx.commit());
    }
  } finally {
    await producer.disconnect();
  }
  return entries;
}

/** Produces with the Kafka Java client; the client partitions and batches, as it does in the field. */
async function produceWithJavaClient(s: KafkaSuite, options: Omit<FieldProducerOptions, 'brokers' | 'topic'>, groups: readonly Group[]): Promise<LedgerEntry[]> {
  const input: (FieldMessage | TransactionEnd)[] = [];
  const messages: Outgoing[] = [];
  for (const g of groups) {
    for (const m of g.messages) {
      input.push({ key: m.key, value: m.value, headers: m.headers });
      messages.push(m);
    }
    if (g.end !== undefined) input.push({ end: g.end });
  }
  const placed = await produceWithJava({ brokers: s.infra.brokers, topic: s.topics.events, ...options }, input);
  return placed.map((p) => entry(messages[p.index]!, p.partition, p.offset, p.fate === 'aborted'));
}

/**
 * The ledger: messages as the field's producers send them (the Java client with every codec,
 * kafkajs, plain and transactional, committed and aborted; values as services and log shippers
 * write them; large keys, many headers, decades of timestamps, sizes up to the broker's limit,
 * tombstones, invalid messages mixed in) must each be accounted for exactly once: a valid event
 * in the feed, an invalid message on the DLQ with its source, an aborted one nowhere, and the
 * group committed to the end of every partition, without a partition ever showing stalled.
 */
describeOnEachStore('the ingest ledger', function (suite) {
  this.timeout(240_000);
  let deadLetters: TopicReader;
  let partitions: number;
  const seedNote = `LEDGER_SEED=${SEED} replays this run`;

  before(async () => {
    deadLetters = await topicReader([suite().topics.deadLetter]);
    const admin = suite().kafka.admin();
    await admin.connect();
    try {
      partitions = (await admin.fetchTopicMetadata({ topics: [suite().topics.events] })).topics[0]!.partitions.length;
    } finally {
      await admin.disconnect();
    }
  });
  after(() => deadLetters.stop());

  const hold = (s: KafkaSuite, tenant: Tenant, title: string, entries: readonly LedgerEntry[]) => holdLedger(s, tenant, deadLetters, `${title} (${seedNote})`, entries);
  const eventOf = (tenant: Tenant, overrides: Partial<CanonicalEvent> = {}) => canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, ...overrides });

  describe('each rule, alone, followed by a valid event on its partition (kafkajs)', () => {
    for (const shape of SHAPES) {
      it(`${shape.name}: ${shape.verdict === 'valid' ? 'valid, to the feed once' : `to the DLQ as ${shape.verdict}`}`, async () => {
        const s = suite();
        const tenant = s.gateway.tenant();
        const event = eventOf(tenant);
        const after = eventOf(tenant);
        const messages = [outgoing('the rule', shape, event, event.device_id!), outgoing('the event after it', COMPACT, after, event.device_id!)];
        await hold(s, tenant, shape.name, await produceWithKafkajs(s, partitions, [{ messages }]));
      });
    }

    it('a 100 KB key: valid, to the feed once', async () => {
      const s = suite();
      const tenant = s.gateway.tenant();
      const [event, after] = [eventOf(tenant), eventOf(tenant)];
      const key = `${event.device_id}:${'k'.repeat(100_000)}`;
      const messages = [outgoing('a 100 KB key', COMPACT, event, key), outgoing('the event after it', COMPACT, after, key)];
      await hold(s, tenant, 'a large key', await produceWithKafkajs(s, partitions, [{ messages }]));
    });

    it('2,000 headers: valid, to the feed once', async () => {
      const s = suite();
      const tenant = s.gateway.tenant();
      const [event, after] = [eventOf(tenant), eventOf(tenant)];
      const messages = [outgoing('2,000 headers', COMPACT, event, event.device_id!, manyHeaders(2000)), outgoing('the event after it', COMPACT, after, event.device_id!)];
      await hold(s, tenant, 'many headers', await produceWithKafkajs(s, partitions, [{ messages }]));
    });
  });

  describe('generated mixes, one producer each', () => {
    const mixes: readonly { name: string; count: number; produce: (s: KafkaSuite, messages: Outgoing[]) => Promise<LedgerEntry[]> }[] = [
      { name: 'kafkajs, idempotent, uncompressed', count: 400, produce: (s, m) => produceWithKafkajs(s, partitions, [{ messages: m }]) },
      { name: 'kafkajs, gzip', count: 300, produce: (s, m) => produceWithKafkajs(s, partitions, [{ messages: m }], CompressionTypes.GZIP) },
      { name: 'kafkajs, transactions committed and aborted', count: 300, produce: (s, m) => produceWithKafkajs(s, partitions, inTransactions(m)) },
      { name: 'Java client, uncompressed', count: 300, produce: (s, m) => produceWithJavaClient(s, { compression: 'none' }, [{ messages: m }]) },
      { name: 'Java client, gzip', count: 300, produce: (s, m) => produceWithJavaClient(s, { compression: 'gzip' }, [{ messages: m }]) },
      { name: 'Java client, snappy, transactions committed and aborted', count: 300, produce: (s, m) => produceWithJavaClient(s, { compression: 'snappy', transaction: 'committed' }, inTransactions(m)) },
      { name: 'Java client, lz4', count: 300, produce: (s, m) => produceWithJavaClient(s, { compression: 'lz4' }, [{ messages: m }]) },
      { name: 'Java client, zstd, transactions committed and aborted', count: 300, produce: (s, m) => produceWithJavaClient(s, { compression: 'zstd', transaction: 'committed' }, inTransactions(m)) },
      { name: 'Java client, lz4, one transaction aborted whole', count: 60, produce: (s, m) => produceWithJavaClient(s, { compression: 'lz4', transaction: 'aborted' }, [{ messages: m }]) },
    ];
    for (const mix of mixes) {
      it(`${mix.name}: ${mix.count} messages, each accounted for once`, async () => {
        const s = suite();
        const tenant = s.gateway.tenant();
        await hold(s, tenant, mix.name, await mix.produce(s, generate(tenant, mix.name, mix.count)));
      });
    }
  });

  describe('timestamps over decades', () => {
    it('stores a backfill of one device, one event a month for 20 years, sent in one produce (kafkajs)', async () => {
      const s = suite();
      const tenant = s.gateway.tenant();
      const device = seededUuid(SEED, 'backfill device');
      // 240 months: one insert of them spans far more than the engine's 100 partitions per insert.
      const events = Array.from({ length: 240 }, (_, i) =>
        eventOf(tenant, { id: seededUuid(SEED, 'backfill', i), device_id: device, occurred_at: isoMicros(Date.UTC(2005, i, 15, 12), i) }),
      );
      await hold(s, tenant, 'a 20-year backfill', await produceWithKafkajs(s, partitions, [{ messages: events.map((e, i) => outgoing(`month ${i}`, COMPACT, e, device)) }]));
    });

    it("stores many devices' history spread over 1900–2299 in one produce (Java client)", async () => {
      const s = suite();
      const tenant = s.gateway.tenant();
      const messages = generate(tenant, 'centuries', 300, Date.parse('1900-01-01T00:00:00Z'), Date.parse('2299-12-31T00:00:00Z'));
      await hold(s, tenant, 'history over centuries', await produceWithJavaClient(s, { compression: 'none', lingerMs: 50 }, [{ messages }]));
    });
  });

  describe("sizes up to the broker's limit", () => {
    it('stores a valid event just under max.message.bytes, dead-letters an invalid one, from kafkajs and from the Java client with gzip', async () => {
      const s = suite();
      const tenant = s.gateway.tenant();
      const admin = s.kafka.admin();
      await admin.connect();
      let limit = KAFKA_DEFAULT_MAX_MESSAGE_BYTES;
      try {
        const { resources } = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: s.topics.events, configNames: ['max.message.bytes'] }] });
        limit = Number(resources[0]?.configEntries.find((c) => c.configName === 'max.message.bytes')?.configValue ?? limit);
      } finally {
        await admin.disconnect();
      }
      // What a one-record batch adds to its value: the batch header (61 bytes) and the record's own fields.
      const room = limit - 512;
      const near = (label: string, key: string): Outgoing[] => {
        const event = eventOf(tenant, { device_id: key });
        const bare = compact({ ...event, payload: { blob: '' } });
        const blob = 'b'.repeat(room - Buffer.byteLength(bare));
        const valid = { ...event, payload: { blob } };
        const whole = (stored: CanonicalEvent) => (stored.payload?.['blob'] === blob ? undefined : 'its payload was not stored whole');
        return [
          { label: `${label}: a valid event of ${room} bytes`, key, value: compact(valid), headers: {}, fate: { kind: 'feed', event: valid, check: whole } },
          { label: `${label}: ${room} bytes of not JSON`, key, value: 'n'.repeat(room), headers: {}, fate: { kind: 'dlq', reason: 'invalid-json' } },
          outgoing(`${label}: the event after them`, COMPACT, eventOf(tenant, { device_id: key }), key),
        ];
      };
      const fromKafkajs = near('kafkajs', seededUuid(SEED, 'near limit', 'kafkajs'));
      const fromJava = near('Java client, gzip', seededUuid(SEED, 'near limit', 'java'));
      const entries = [
        ...(await produceWithKafkajs(s, partitions, fromKafkajs.map((m) => ({ messages: [m] })))),
        ...(await produceWithJavaClient(s, { compression: 'gzip', maxRequestSize: limit + 1024 }, [{ messages: fromJava }])),
      ];
      await hold(s, tenant, 'near the size limit', entries);
    });
  });
});
