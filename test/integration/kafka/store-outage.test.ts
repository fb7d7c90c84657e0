import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import { createEventIngestor } from '../../../src/ingest/event-ingestor.js';
import { createIngestConsumer, type IngestConsumer } from '../../../src/ingest/kafka-ingest-consumer.js';
import { SUMMARY_EVERY_MS } from '../../../src/observability/repeated-condition.js';
import { KAFKA_DEFAULT_MAX_MESSAGE_BYTES } from '../../../src/kafka/message-bytes.js';
import { createGatewayMetrics } from '../../../src/metrics/gateway-metrics.js';
import { openStore } from '../../../src/runtime/store-runtime.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import { createClickHouseEventStore } from '../../../src/store/clickhouse-event-store.js';
import type { EventStore } from '../../../src/store/event-store.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { capturedLogger } from '../../support/captured-logger.js';
import { eventSeries } from '../../support/factories.js';
import { committedOffsets, createTopics } from '../../support/kafka-topics.js';
import { waitFor } from '../../support/wait-for.js';
import { describeOnEachStore } from './kafka-suite.js';

/**
 * A consumer of its own on a topic of its own, over the suite's real store, whose
 * insertEvents fails for its first calls: nothing may be committed until the batch is
 * stored, and then every event is there once.
 */
describeOnEachStore('ingest while the store is failing', function (suite) {
  this.timeout(90_000);
  const run = randomBytes(4).toString('hex');
  const topic = `store-outage.${run}`;
  const groupId = `store-outage-${run}`;
  let transport: SqlTransport;
  let consumer: IngestConsumer | undefined;

  before(async () => {
    const { kafka, gateway } = suite();
    await createTopics(kafka, [{ topic, numPartitions: 1 }, { topic: `${topic}.dlq`, numPartitions: 1 }]);
    // A second connection to the suite's store (chDB allows it within one process).
    transport = await openStore(gateway.config);
  });

  after(async () => {
    await consumer?.stop();
    await transport.close();
  });

  const committedOffset = async (): Promise<string> => String((await committedOffsets(suite().kafka, groupId, topic)).get(0) ?? '-1');

  it('retries with backoff, commits nothing until the batch is stored, then stores every event once', async () => {
    const { kafka, gateway } = suite();
    const tenant = gateway.tenant();
    const events: CanonicalEvent[] = eventSeries(25, { org_id: tenant.orgId, project_id: tenant.projectId });

    const log = capturedLogger('info');
    const real = createClickHouseEventStore(transport);
    let failuresLeft = 3;
    let attempts = 0;
    const failing: EventStore = {
      ...real,
      async insertEvents(batch) {
        attempts += 1;
        if (failuresLeft > 0) {
          failuresLeft -= 1;
          // What a lost connection looks like: the store does not answer, so nothing is judged.
          throw Object.assign(new Error('connect ECONNREFUSED (injected)'), { code: 'ECONNREFUSED' });
        }
        return real.insertEvents(batch);
      },
    };
    consumer = createIngestConsumer({
      kafka,
      metrics: createGatewayMetrics(),
      groupId,
      sources: [{ topic, format: 'canonical-event' }],
      deadLetterTopic: `${topic}.dlq`,
      deadLetterMaxBytes: KAFKA_DEFAULT_MAX_MESSAGE_BYTES,
      ingestor: createEventIngestor({ store: failing, schemas: createSchemaRegistry() }),
      batchSize: 1000,
      batchBytes: 1024 * 1024,
      batchWaitMs: 20,
      maxInFlightEvents: 4000,
      maxInFlightBytes: 4 * 1024 * 1024,
      fetchPartitionBytes: 1024 * 1024,
      stallMs: 60_000,
      sessionTimeoutMs: 10_000,
      metadataMaxAgeMs: 10_000,
      logger: log.logger,
    });
    await consumer.start();

    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, acks: -1, messages: events.map((e) => ({ key: e.device_id!, value: JSON.stringify(e) })) });
    await producer.disconnect();

    await waitFor('the first failed attempts', async () => (attempts >= 2 ? true : undefined));
    expect(await committedOffset(), 'nothing committed while the store fails').to.equal('-1');

    await waitFor('the batch committed after recovery', async () => ((await committedOffset()) === '25' ? true : undefined), 60_000, 200);
    // However kafkajs split the 25 messages into batches, every injected failure was met and retried past.
    expect(failuresLeft).to.equal(0);
    expect(attempts).to.be.greaterThan(3);
    const [row] = await transport.query<{ n: string; ids: string }>(
      'SELECT count() AS n, uniqExact(id) AS ids FROM events WHERE org_id = {org:UUID} AND project_id = {project:UUID}',
      { org: tenant.orgId, project: tenant.projectId },
    );
    expect(Number(row!.ids)).to.equal(25);
    expect(Number(row!.n)).to.equal(25);
    // The outage in the log: one line when it began, a summary a period at most while it lasted, one when it ended.
    const stall = log.lines.filter((l) => String(l['msg']).startsWith('storing ingested batches failed'));
    expect(stall[0]).to.include({ msg: 'storing ingested batches failed: began; retrying', cause: 'event store failed for a reason that is not about the rows: connect ECONNREFUSED (injected)', topic });
    expect(stall.at(-1)).to.include({ msg: 'storing ingested batches failed: ended' });
    // A failed insert fails every batch it held: three failures are three retries or more.
    expect(Number(stall.at(-1)!['occurrences'])).to.be.at.least(3);
    const lasting = Number(stall.at(-1)!['lastingMs']);
    expect(stall.length, `lines for an outage of ${lasting} ms`).to.be.at.most(2 + Math.floor(lasting / SUMMARY_EVERY_MS));
    expect(stall.filter((l) => Number(l['level']) >= 50 || 'err' in l), 'no error, and no stack').to.deep.equal([]);
  });
});
