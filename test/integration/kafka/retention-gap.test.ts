import { expect } from 'chai';
import type { Kafka } from 'kafkajs';
import { createEventIngestor } from '../../../src/ingest/event-ingestor.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import { createClickHouseEventStore } from '../../../src/store/clickhouse-event-store.js';
import type { EventStore } from '../../../src/store/event-store.js';
import { createGatewayMetrics } from '../../../src/metrics/gateway-metrics.js';
import { capturedLogger } from '../../support/captured-logger.js';
import { canonicalEvent } from '../../support/factories.js';
import { committedToEnd } from '../../support/kafka-topics.js';
import { parseMetrics, samplesOf } from '../../support/metrics-text.js';
import { waitFor } from '../../support/wait-for.js';
import { describeOnEachStore } from './kafka-suite.js';
import { feedIds, ownConsumerHooks, ownIngestConsumer, ownTopic, sendTo } from './own-ingest-consumer.js';

/** pino's number for the error level. */
const ERROR = 50;
const GAP_MESSAGE = 'offsets deleted before they were read (retention or deleteRecords); their messages are in neither the feed nor the dead-letter topic';

/** Deletes the partition's records below `offset`, as retention would, with the kafkajs admin (Kafka's deleteRecords). */
async function deleteBelow(kafka: Kafka, topic: string, partition: number, offset: number): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    // deleteTopicRecords looks the leader up in metadata it does not load itself (kafkajs 2.2.4).
    await admin.fetchTopicMetadata({ topics: [topic] });
    await admin.deleteTopicRecords({ topic, partitions: [{ partition, offset: String(offset) }] });
  } finally {
    await admin.disconnect();
  }
}

describeOnEachStore('offsets deleted before the ingest consumer read them', function (suite) {
  this.timeout(120_000);
  const { transport, started } = ownConsumerHooks(suite);

  it('logs the exact range at error level, counts it per partition, and reads on from the log start', async () => {
    const s = suite();
    const tenant = s.gateway.tenant();
    const own = await ownTopic(s, 'retention-gap', 2);
    // Partition 0 at offsets 0–9, partition 1 at 0–2.
    const first = Array.from({ length: 10 }, () => canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId }));
    const second = Array.from({ length: 3 }, () => canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId }));
    await sendTo(s.kafka, own.topic, 0, first);
    await sendTo(s.kafka, own.topic, 1, second);

    // The group had read partition 0 up to offset 3 and nothing of partition 1 when it went
    // down; then retention (here deleteRecords, as kafkajs calls it deleteTopicRecords) removed partition 0 below offset 7.
    const admin = s.kafka.admin();
    await admin.connect();
    try {
      await admin.setOffsets({ groupId: own.groupId, topic: own.topic, partitions: [{ partition: 0, offset: '3' }, { partition: 1, offset: '0' }] });
      await admin.deleteTopicRecords({ topic: own.topic, partitions: [{ partition: 0, offset: '7' }] });
      const [start] = (await admin.fetchTopicOffsets(own.topic)).filter((p) => p.partition === 0);
      expect(start?.low, 'log start of partition 0').to.equal('7');
    } finally {
      await admin.disconnect();
    }

    const metrics = createGatewayMetrics();
    const log = capturedLogger('info');
    await started(ownIngestConsumer(s, own, transport(), metrics, log.logger)).start();

    // It goes on from the log start: offsets 7–9 of partition 0 and all of partition 1, nothing else.
    const expected = [...first.slice(7), ...second].map((e) => e.id).sort();
    await waitFor('the events after the gap, and those of partition 1, in the feed', async () => {
      const ids = (await feedIds(s, tenant)).sort();
      return JSON.stringify(ids) === JSON.stringify(expected) ? true : undefined;
    }, 30_000, 100);
    await waitFor('both partitions committed to their end', () => committedToEnd(s.kafka, own.groupId, own.topic), 30_000, 100);

    const gaps = log.lines.filter((line) => line.msg === GAP_MESSAGE);
    expect(gaps.map(({ level, topic, partition, firstOffset, lastOffset, skipped }) => ({ level, topic, partition, firstOffset, lastOffset, skipped }))).to.deep.equal([
      { level: ERROR, topic: own.topic, partition: 0, firstOffset: '3', lastOffset: '6', skipped: 4 },
    ]);
    const skipped = samplesOf(parseMetrics(await metrics.registry.metrics()), 'ingest_retention_skipped_total', { topic: own.topic });
    expect(skipped.map((sample) => [sample.labels.partition, sample.value]).sort()).to.deep.equal([
      ['0', 4],
      ['1', 0],
    ]);
  });

  it('reports the range when a running consumer\'s fetch position falls below the log start, as in a store outage longer than retention', async () => {
    const s = suite();
    const tenant = s.gateway.tenant();
    const own = await ownTopic(s, 'retention-gap-running', 1);
    // Three sends, three record batches: offsets 0–4, 5–9 and 10–14.
    const sends = Array.from({ length: 3 }, () => Array.from({ length: 5 }, () => canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId })));
    for (const events of sends) await sendTo(s.kafka, own.topic, 0, events);

    // The store takes no insert until released: the first batch waits in it, and the second
    // waits for room behind it, holding kafkajs's fetch position at its own start.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let inserts = 0;
    const real = createClickHouseEventStore(transport());
    const store: EventStore = {
      ...real,
      async insertEvents(events) {
        inserts += 1;
        await released;
        await real.insertEvents(events);
      },
    };
    // Which batches kafkajs has handed to the consumer, by first offset, read off the kafkajs consumer it creates.
    const handedOver: string[] = [];
    const watched = Object.create(s.kafka) as Kafka;
    watched.consumer = (config) => {
      const consumer = s.kafka.consumer(config);
      consumer.on(consumer.events.START_BATCH_PROCESS, ({ payload }) => handedOver.push(payload.firstOffset));
      return consumer;
    };
    const metrics = createGatewayMetrics();
    const log = capturedLogger('info');
    const consumer = started(
      ownIngestConsumer(s, own, transport(), metrics, log.logger, {
      kafka: watched,
      ingestor: createEventIngestor({ store, schemas: createSchemaRegistry() }),
      // One record batch per fetch (the broker always returns the first whole), and room for one batch of five in flight.
      fetchPartitionBytes: 1,
      maxInFlightEvents: 5,
      maxInFlightBytes: 1024 * 1024,
      }),
    );
    await consumer.start();
    try {
      await waitFor('the first batch in the store, the second waiting behind it', async () => (inserts >= 1 && handedOver.includes('5') ? true : undefined), 30_000, 20);
      expect(handedOver, 'batches handed over while the store holds the first').to.deep.equal(['0', '5']);
      // Retention catches up with the stalled consumer: offsets below 12 go.
      await deleteBelow(s.kafka, own.topic, 0, 12);
    } finally {
      // Whatever happened: the stop would otherwise wait on the held insert.
      release();
    }

    // Offsets 0–9 were fetched before the deletion and are stored; 10 and 11 were never read.
    const expected = [...sends[0]!, ...sends[1]!, ...sends[2]!.slice(2)].map((e) => e.id).sort();
    await waitFor('the events fetched before the deletion and those after the gap in the feed', async () => {
      const ids = (await feedIds(s, tenant)).sort();
      return JSON.stringify(ids) === JSON.stringify(expected) ? true : undefined;
    }, 30_000, 100);
    const gaps = log.lines.filter((line) => line.msg === GAP_MESSAGE);
    expect(gaps.map(({ level, topic, partition, firstOffset, lastOffset, skipped }) => ({ level, topic, partition, firstOffset, lastOffset, skipped }))).to.deep.equal([
      { level: ERROR, topic: own.topic, partition: 0, firstOffset: '10', lastOffset: '11', skipped: 2 },
    ]);
    const skipped = samplesOf(parseMetrics(await metrics.registry.metrics()), 'ingest_retention_skipped_total', { topic: own.topic });
    expect(skipped.map((sample) => sample.value)).to.deep.equal([2]);
  });
});
