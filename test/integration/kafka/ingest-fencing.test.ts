import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import { createEventIngestor } from '../../../src/ingest/event-ingestor.js';
import { createIngestConsumer, type IngestConsumer } from '../../../src/ingest/kafka-ingest-consumer.js';
import { KAFKA_DEFAULT_MAX_MESSAGE_BYTES } from '../../../src/kafka/message-bytes.js';
import { createGatewayMetrics, type GatewayMetrics } from '../../../src/metrics/gateway-metrics.js';
import { createLogger } from '../../../src/observability/logger.js';
import { openStore } from '../../../src/runtime/store-runtime.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import { createClickHouseEventStore } from '../../../src/store/clickhouse-event-store.js';
import type { EventStore } from '../../../src/store/event-store.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { canonicalEvent } from '../../support/factories.js';
import { committedOffsets, committedToEnd, createTopics, topicEnds } from '../../support/kafka-topics.js';
import { parseMetrics, samplesOf } from '../../support/metrics-text.js';
import { waitFor } from '../../support/wait-for.js';
import { groupMembers } from './ingest-group.js';
import { describeOnEachStore, type KafkaSuite } from './kafka-suite.js';

/** What the stores of several members have stored between them, by event id. */
type StoredIds = Set<string>;

/** The suite's real store behind a switch: while `sick`, every insert fails as an unreachable store does; what it stores is noted by id. */
function switchableStore(transport: SqlTransport, stored: StoredIds = new Set()) {
  const real = createClickHouseEventStore(transport);
  const state = { sick: false, failedInserts: 0 };
  const store: EventStore = {
    ...real,
    async insertEvents(events) {
      if (state.sick) {
        state.failedInserts += 1;
        throw Object.assign(new Error('connect ECONNREFUSED (injected)'), { code: 'ECONNREFUSED' });
      }
      await real.insertEvents(events);
      for (const e of events) stored.add(e.event.id);
    },
  };
  return { store, state, stored };
}

/**
 * Ingest consumers of their own, in this process, on a topic of their own, over the suite's
 * real store: the rebalance and the stall are provoked here, and their effects read back
 * from the broker (committed offsets) and from the consumers' own probes.
 */
describeOnEachStore('ingest under rebalances and a failing store', function (suite) {
  this.timeout(180_000);
  let transport: SqlTransport;
  const consumers: IngestConsumer[] = [];

  before(async () => {
    transport = await openStore(suite().gateway.config);
  });

  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((c) => c.stop()));
  });

  after(async () => {
    await transport.close();
  });

  async function topicOf(s: KafkaSuite, partitions: number): Promise<{ topic: string; groupId: string }> {
    const run = randomBytes(4).toString('hex');
    const topic = `ingest-fencing.${run}`;
    await createTopics(s.kafka, [{ topic, numPartitions: partitions }, { topic: `${topic}.dlq`, numPartitions: 1 }]);
    return { topic, groupId: `ingest-fencing-${run}` };
  }

  function consumer(s: KafkaSuite, topic: string, groupId: string, store: EventStore, metrics: GatewayMetrics, stallMs = 60_000): IngestConsumer {
    const created = createIngestConsumer({
      kafka: s.kafka,
      metrics,
      groupId,
      sources: [{ topic, format: 'canonical-event' }],
      deadLetterTopic: `${topic}.dlq`,
      deadLetterMaxBytes: KAFKA_DEFAULT_MAX_MESSAGE_BYTES,
      ingestor: createEventIngestor({ store, schemas: createSchemaRegistry() }),
      batchSize: 200,
      batchBytes: 1024 * 1024,
      batchWaitMs: 20,
      maxInFlightEvents: 400,
      maxInFlightBytes: 4 * 1024 * 1024,
      fetchPartitionBytes: 1024 * 1024,
      stallMs,
      sessionTimeoutMs: 10_000,
      metadataMaxAgeMs: 10_000,
      logger: createLogger('silent'),
    });
    consumers.push(created);
    return created;
  }

  /** Produces the events keyed by device, and says where each landed. */
  async function produce(s: KafkaSuite, topic: string, events: readonly CanonicalEvent[]): Promise<Map<number, { offset: bigint; id: string }[]>> {
    const producer = s.kafka.producer();
    await producer.connect();
    const where = new Map<number, { offset: bigint; id: string }[]>();
    try {
      for (const e of events) {
        const [sent] = await producer.send({ topic, acks: -1, messages: [{ key: e.device_id!, value: JSON.stringify(e) }] });
        const list = where.get(sent!.partition) ?? [];
        list.push({ offset: BigInt(sent!.baseOffset!), id: e.id });
        where.set(sent!.partition, list);
      }
    } finally {
      await producer.disconnect();
    }
    return where;
  }

  it('never moves a committed offset back, nor past what is stored, when a member cut off from the store loses its partitions', async () => {
    const s = suite();
    const tenant = s.gateway.tenant();
    const { topic, groupId } = await topicOf(s, 4);
    const stored: StoredIds = new Set();
    // Member A loses the store (a network partition between it and ClickHouse, say); member B reaches it.
    const a = switchableStore(transport, stored);
    const b = switchableStore(transport, stored);
    const batch = () => Array.from({ length: 40 }, () => canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId }));
    const events: CanonicalEvent[] = [];

    // Committed offsets, sampled until the end: each sample must be at or past the one before,
    // and every event below it must already be stored.
    const violations: string[] = [];
    const seen = new Map<number, bigint>();
    const placed = new Map<number, { offset: bigint; id: string }[]>();
    const place = (where: Map<number, { offset: bigint; id: string }[]>) => {
      for (const [p, list] of where) placed.set(p, [...(placed.get(p) ?? []), ...list]);
    };
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        for (const [partition, offset] of await committedOffsets(s.kafka, groupId, topic)) {
          const before = seen.get(partition) ?? -1n;
          if (offset < before) violations.push(`partition ${partition} went back from ${before} to ${offset}`);
          seen.set(partition, offset);
          for (const { offset: at, id } of placed.get(partition) ?? []) {
            if (at < offset && !stored.has(id)) violations.push(`partition ${partition} committed ${offset} past unstored offset ${at}`);
          }
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();

    try {
      const first = consumer(s, topic, groupId, a.store, createGatewayMetrics());
      await first.start();
      const healthy = batch();
      events.push(...healthy);
      place(await produce(s, topic, healthy));
      await waitFor('the first batch committed', () => committedToEnd(s.kafka, groupId, topic), 60_000, 100);

      a.state.sick = true;
      const stuck = batch();
      events.push(...stuck);
      const stuckAt = await produce(s, topic, stuck);
      place(stuckAt);
      await waitFor('member A retrying against the store it cannot reach', async () => (a.state.failedInserts >= 2 ? true : undefined), 60_000, 50);

      // Member B joins while A's batches are failing and retrying: the group rebalances, and B takes some of A's partitions.
      const second = consumer(s, topic, groupId, b.store, createGatewayMetrics());
      await second.start();
      await waitFor('both members holding partitions', async () => {
        const group = await groupMembers(s.kafka, groupId, topic);
        return group.members.length === 2 && group.members.every((m) => m.partitions.length > 0) ? true : undefined;
      }, 90_000, 200);
      // B moves its partitions on past the batches A still holds for them. A cannot store, so
      // a partition that A's failing batch was on and that is now committed to its end is B's.
      const more = batch();
      events.push(...more);
      place(await produce(s, topic, more));
      await waitFor('B past one of the batches A still holds', async () => {
        const [committed, ends] = [await committedOffsets(s.kafka, groupId, topic), await topicEnds(s.kafka, topic)];
        return [...stuckAt.keys()].some((p) => committed.get(p) === ends.get(p)) ? true : undefined;
      }, 90_000, 100);

      // A reaches the store again; whatever it still held from before the rebalance must not be committed now.
      a.state.sick = false;
      await waitFor('every partition committed to its end', () => committedToEnd(s.kafka, groupId, topic), 90_000, 200);
      // Stopping A settles every batch it still held: a stale commit has landed by then, or never will.
      await first.stop();
      consumers.splice(consumers.indexOf(first), 1);
    } finally {
      sampling = false;
      await sampler;
    }
    expect(violations).to.deep.equal([]);
    expect(await committedToEnd(s.kafka, groupId, topic)).to.equal(true);
    expect(events.filter((e) => !stored.has(e.id))).to.deep.equal([]);
  });

  it('shows a partition stalled on /metrics and in its readiness while the store fails, and clears both once it commits again', async () => {
    const s = suite();
    const tenant = s.gateway.tenant();
    const { topic, groupId } = await topicOf(s, 1);
    const { store, state } = switchableStore(transport);
    const metrics = createGatewayMetrics();
    const stalled = async () => samplesOf(parseMetrics(await metrics.registry.metrics()), 'ingest_partition_stalled', { topic, partition: '0' })[0]?.value;
    const ingest = consumer(s, topic, groupId, store, metrics, 1500);
    await ingest.start();
    await waitFor('the partition reported, not stalled', async () => ((await stalled()) === 0 ? true : undefined), 60_000, 100);

    state.sick = true;
    await produce(s, topic, Array.from({ length: 10 }, () => canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId })));
    await waitFor('the partition stalled on /metrics', async () => ((await stalled()) === 1 ? true : undefined), 60_000, 100);
    const refusal = await waitFor('readiness failing', async () => {
      const error = await ingest.readiness.check().then(() => undefined, (e: unknown) => e as Error);
      return error;
    }, 30_000, 100);
    expect(refusal.message).to.match(new RegExp(`^ingestion stalled: .* on ${topic.replace(/\./g, '\\.')}/0 \\(\\d+ s\\)$`));
    expect(await committedOffsets(s.kafka, groupId, topic)).to.satisfy((m: Map<number, bigint>) => (m.get(0) ?? -1n) <= 0n);

    state.sick = false;
    await waitFor('committed to the end', () => committedToEnd(s.kafka, groupId, topic), 60_000, 100);
    await waitFor('the stall cleared on /metrics', async () => ((await stalled()) === 0 ? true : undefined), 30_000, 100);
    await ingest.readiness.check();
  });

  it('removes the metrics of partitions this member no longer holds', async () => {
    const s = suite();
    const { topic, groupId } = await topicOf(s, 4);
    const { store } = switchableStore(transport);
    const metrics = createGatewayMetrics();
    const reported = async () =>
      samplesOf(parseMetrics(await metrics.registry.metrics()), 'ingest_partition_stalled').filter((x) => x.labels['topic'] === topic).map((x) => x.labels['partition']).sort();
    const first = consumer(s, topic, groupId, store, metrics);
    await first.start();
    await waitFor('all four partitions reported', async () => ((await reported()).length === 4 ? true : undefined), 60_000, 100);
    const second = consumer(s, topic, groupId, store, createGatewayMetrics());
    await second.start();
    const mine = await waitFor('the partitions split between two members', async () => {
      const { members } = await groupMembers(s.kafka, groupId, topic);
      return members.length === 2 && members.every((m) => m.partitions.length === 2) ? members : undefined;
    }, 90_000, 200);
    await waitFor('only the first member\'s partitions reported by it', async () => {
      const now = await reported();
      return now.length === 2 && mine.some((m) => m.partitions.map(String).sort().join() === now.join()) ? true : undefined;
    }, 30_000, 100);
  });
});
