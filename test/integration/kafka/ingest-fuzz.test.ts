import { expect } from 'chai';
import fc from 'fast-check';
import type { Message } from 'kafkajs';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import { openStore } from '../../../src/runtime/store-runtime.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { canonicalEvent, uuid } from '../../support/factories.js';
import { deeplyNested, hugeNumber, oddStrings, protoKeys, uuidVariant } from '../../support/fuzz-arbitraries.js';
import { committedToEnd, readToEnd } from '../../support/kafka-topics.js';
import { waitFor } from '../../support/wait-for.js';
import { wholeFeed } from './feed-helpers.js';
import { describeOnEachStore } from './kafka-suite.js';

/** How many generated messages per store; `npm run fuzz:ingest` raises it. */
const RUNS = Number(process.env['FUZZ_INGEST_RUNS'] ?? 300);

const bytes = (max: number) => fc.uint8Array({ maxLength: max }).map((a) => Buffer.from(a));

/** A canonical event of the tenant with one member replaced, removed or added: close to valid, which is where validation is tested hardest. */
const mutatedEvent = (base: () => CanonicalEvent) =>
  fc
    .tuple(
      fc.constantFrom('id', 'org_id', 'project_id', 'domain', 'entity', 'action', 'occurred_at', 'device_id', 'payload', 'source_service', 'trace_id', 'extra'),
      fc.oneof(fc.jsonValue(), uuidVariant, fc.constant(undefined), fc.string({ maxLength: 300 }), fc.date({ noInvalidDate: true }).map((d) => d.toISOString())),
    )
    .map(([field, value]) => JSON.stringify({ ...base(), [field]: value }));

/** Text spliced into a valid event where its payload stands: the HTTP fuzz suite's hostile JSON. */
const splicedEvent = (base: () => CanonicalEvent) =>
  fc.oneof(deeplyNested, hugeNumber, protoKeys, oddStrings).map((fragment) => JSON.stringify(base()).replace('{"temperature":21.5}', fragment));

/**
 * Messages of every shape another service could publish to platform.events, then one valid
 * sentinel per partition: each sentinel must reach the feed and every partition must be
 * committed to its end, so that no input stalled a partition; and every message must be
 * accounted for, either on the DLQ (by its source offset) or stored (by its id).
 */
describeOnEachStore('ingest fuzzing', function (suite) {
  this.timeout(300_000);
  let sql: SqlTransport;

  before(async () => {
    sql = await openStore(suite().gateway.config);
  });
  after(() => sql.close());

  it(`neither stalls a partition nor loses a message, over ${RUNS} generated messages`, async () => {
    const s = suite();
    const tenant = s.gateway.tenant();
    const base = () => canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId });
    const value = fc.oneof(
      { weight: 3, arbitrary: mutatedEvent(base) },
      { weight: 2, arbitrary: splicedEvent(base) },
      { weight: 2, arbitrary: fc.constant(null).map(() => JSON.stringify(base())) },
      { weight: 1, arbitrary: bytes(400) },
      { weight: 1, arbitrary: fc.json() },
      { weight: 1, arbitrary: fc.constantFrom('', null) },
    );
    const message: fc.Arbitrary<Message> = fc.record({
      key: fc.oneof(fc.constant(null), fc.string({ maxLength: 40 }), bytes(40)),
      value,
      headers: fc.dictionary(
        // Names Object.prototype already has: kafkajs once decoded `toString` as a repeat of the inherited method.
        fc.oneof(fc.string({ minLength: 1, maxLength: 20 }), fc.constantFrom('toString', '__proto__', 'constructor', 'valueOf', 'hasOwnProperty')),
        fc.oneof(fc.string({ maxLength: 60 }), bytes(60)),
        { maxKeys: 4 },
      ),
    });
    const seed = Number(process.env['FUZZ_SEED'] ?? Date.now() % 2 ** 31);
    const generated = fc.sample(message, { numRuns: RUNS, seed });

    const admin = s.kafka.admin();
    await admin.connect();
    const partitions = (await admin.fetchTopicMetadata({ topics: [s.topics.events] })).topics[0]!.partitions.map((p) => p.partitionId);
    await admin.disconnect();

    // Each message goes to a partition named here, one partition per send, so its offset is known exactly.
    const byPartition = new Map(partitions.map((p) => [p, generated.filter((_, i) => partitions[i % partitions.length] === p)]));
    const producer = s.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const placed: { partition: number; offset: string; message: Message }[] = [];
    const sentinels: CanonicalEvent[] = [];
    try {
      for (const [partition, messages] of byPartition) {
        for (let i = 0; i < messages.length; i += 50) {
          const chunk = messages.slice(i, i + 50);
          const [answer] = await producer.send({ topic: s.topics.events, acks: -1, messages: chunk.map((m) => ({ ...m, partition })) });
          chunk.forEach((m, k) => placed.push({ partition, offset: String(BigInt(answer!.baseOffset!) + BigInt(k)), message: m }));
        }
        const sentinel = base();
        sentinels.push(sentinel);
        await producer.send({ topic: s.topics.events, acks: -1, messages: [{ partition, key: uuid(), value: JSON.stringify(sentinel) }] });
      }
    } finally {
      await producer.disconnect();
    }

    const failure = `fuzz seed ${seed} (FUZZ_SEED=${seed} reproduces it)`;
    await waitFor(`every sentinel in the feed (${failure})`, async () => {
      const feed = new Set((await wholeFeed(s.gateway, tenant)).map((e) => e.id));
      return sentinels.every((e) => feed.has(e.id)) ? true : undefined;
    }, 120_000, 250);
    await waitFor(`the topic committed to its end (${failure})`, () => committedToEnd(s.kafka, s.consumerGroup, s.topics.events), 60_000, 200);

    const dead = new Set(
      (await readToEnd(s.kafka, [s.topics.deadLetter]))
        .filter((d) => d.headers['dlq-source-topic'] === s.topics.events)
        .map((d) => `${d.headers['dlq-source-partition']}/${d.headers['dlq-source-offset']}`),
    );
    const unaccounted: string[] = [];
    for (const { partition, offset, message: m } of placed) {
      if (dead.has(`${partition}/${offset}`)) continue;
      // Not dead-lettered: it must have been a valid event, and be stored under its id.
      const id = (JSON.parse(String(m.value)) as { id: string }).id;
      const [row] = await sql.query<{ n: string }>('SELECT count() AS n FROM events WHERE id = {id:UUID}', { id });
      if (Number(row?.n ?? 0) === 0) unaccounted.push(`${partition}/${offset}: ${String(m.value).slice(0, 120)}`);
    }
    expect(unaccounted, failure).to.deep.equal([]);
  });
});
