import { expect } from 'chai';
import type { Kafka } from 'kafkajs';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import { createEventIngestor } from '../../../src/ingest/event-ingestor.js';
import { createGatewayMetrics, type GatewayMetrics } from '../../../src/metrics/gateway-metrics.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import { createClickHouseEventStore } from '../../../src/store/clickhouse-event-store.js';
import type { EventStore } from '../../../src/store/event-store.js';
import { capturedLogger } from '../../support/captured-logger.js';
import { canonicalEvent } from '../../support/factories.js';
import { waitFor } from '../../support/wait-for.js';
import { describeOnEachStore } from './kafka-suite.js';
import { ownConsumerHooks, ownIngestConsumer, ownTopic } from './own-ingest-consumer.js';

/** One series of a registry's metric: a histogram's by its suffixed name (`_bucket`, `_count`). */
async function sample(metrics: GatewayMetrics, base: string, series: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const metric = await metrics.registry.getSingleMetric(base)?.get();
  return metric?.values.find((v) => ('metricName' in v && typeof v.metricName === 'string' ? v.metricName : metric.name) === series && Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want))?.value;
}

const KAFKA_AGE = 'ingest_visible_age_from_kafka_timestamp_seconds';
const OCCURRED_AGE = 'ingest_visible_age_from_occurred_at_seconds';

/** Sends events to partition 0 of `topic` with the given Kafka timestamp (CreateTime, ms). */
async function sendStamped(kafka: Kafka, topic: string, events: readonly CanonicalEvent[], timestampMs: number): Promise<void> {
  const producer = kafka.producer();
  await producer.connect();
  try {
    await producer.send({ topic, acks: -1, messages: events.map((e) => ({ partition: 0, key: e.device_id!, value: JSON.stringify(e), timestamp: String(timestampMs) })) });
  } finally {
    await producer.disconnect();
  }
}

/**
 * The freshness figures of a consumer of its own, on a topic of its own and the suite's real
 * store: the ages of stored events in their buckets, and the lag in seconds of a partition
 * whose store writes are held back, then let go.
 */
describeOnEachStore('freshness metrics of ingestion', function (suite) {
  this.timeout(90_000);
  const hooks = ownConsumerHooks(suite);

  it('puts each stored event into the age buckets of its Kafka timestamp and of its occurred_at, apart', async () => {
    const s = suite();
    const own = await ownTopic(s, 'freshness-ages', 1);
    const tenant = s.gateway.tenant();
    const metrics = createGatewayMetrics();
    const consumer = hooks.started(ownIngestConsumer(s, own, hooks.transport(), metrics, capturedLogger('warn').logger));
    await consumer.start();

    // Sent to Kafka two minutes ago (as a producer with a backlog would have), and occurred three days ago (a device back online).
    const events = Array.from({ length: 12 }, () => canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, occurred_at: new Date(Date.now() - 3 * 86_400_000).toISOString() }));
    await sendStamped(s.kafka, own.topic, events, Date.now() - 120_000);
    await waitFor('every event observed', async () => ((await sample(metrics, KAFKA_AGE, `${KAFKA_AGE}_count`)) === events.length ? true : undefined), 60_000);

    const bucket = (base: string, le: string) => sample(metrics, base, `${base}_bucket`, { le });
    expect(await bucket(KAFKA_AGE, '60'), 'none visible within a minute of its Kafka timestamp').to.equal(0);
    expect(await bucket(KAFKA_AGE, '300'), 'every one within five minutes of it').to.equal(events.length);
    expect(await bucket(OCCURRED_AGE, '86400'), 'none within a day of its occurred_at').to.equal(0);
    expect(await bucket(OCCURRED_AGE, '604800'), 'every one within a week of it').to.equal(events.length);
    expect(await sample(metrics, OCCURRED_AGE, `${OCCURRED_AGE}_count`)).to.equal(events.length);
  });

  it('reports the lag in seconds of a partition whose writes are held back, and 0 once they are stored', async () => {
    const s = suite();
    const own = await ownTopic(s, 'freshness-lag', 1);
    const tenant = s.gateway.tenant();
    const metrics = createGatewayMetrics();
    const real = createClickHouseEventStore(hooks.transport());
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const held: EventStore = {
      ...real,
      async insertEvents(batch) {
        await released;
        return real.insertEvents(batch);
      },
    };
    const consumer = hooks.started(
      ownIngestConsumer(s, own, hooks.transport(), metrics, capturedLogger('warn').logger, { ingestor: createEventIngestor({ store: held, schemas: createSchemaRegistry() }) }),
    );
    await consumer.start();

    const sentAt = Date.now() - 10_000;
    const events = Array.from({ length: 5 }, () => canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId }));
    await sendStamped(s.kafka, own.topic, events, sentAt);
    const partition = { topic: own.topic, partition: '0' };
    const lag = async () => sample(metrics, 'kafka_consumer_lag_seconds', 'kafka_consumer_lag_seconds', partition);

    // The fetched batch waits on the store: its oldest message is the oldest unread, at least ten seconds old.
    await waitFor('the lag while held back', async () => ((await lag()) ?? 0) >= 10 ? true : undefined, 60_000);
    expect(await sample(metrics, 'ingest_oldest_unread_timestamp_seconds', 'ingest_oldest_unread_timestamp_seconds', partition)).to.equal(sentAt / 1000);
    expect((await sample(metrics, KAFKA_AGE, `${KAFKA_AGE}_count`)) ?? 0, 'nothing visible yet').to.equal(0);

    release();
    await waitFor('the lag back to 0 once stored', async () => ((await lag()) === 0 ? true : undefined), 60_000);
    const stamp = await sample(metrics, 'ingest_oldest_unread_timestamp_seconds', 'ingest_oldest_unread_timestamp_seconds', partition);
    expect(stamp, 'caught up: the timestamp follows the clock').to.be.above(sentAt / 1000 + 9);
    expect(await sample(metrics, KAFKA_AGE, `${KAFKA_AGE}_count`)).to.equal(events.length);
  });
});
