import { randomBytes } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import type { CanonicalEvent, CanonicalEventPageResponse } from '../../../src/generated/schema-types.js';
import { createEventIngestor } from '../../../src/ingest/event-ingestor.js';
import { createIngestConsumer, type IngestConsumer, type IngestConsumerOptions } from '../../../src/ingest/kafka-ingest-consumer.js';
import { KAFKA_DEFAULT_MAX_MESSAGE_BYTES } from '../../../src/kafka/message-bytes.js';
import type { GatewayMetrics } from '../../../src/metrics/gateway-metrics.js';
import type { Logger } from '../../../src/observability/logger.js';
import { openStore } from '../../../src/runtime/store-runtime.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import { createClickHouseEventStore } from '../../../src/store/clickhouse-event-store.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { createTopics } from '../../support/kafka-topics.js';
import type { Tenant } from '../../support/test-gateway.js';
import type { KafkaSuite } from './kafka-suite.js';

/** An events topic, its dead-letter topic and a consumer group, named for one test alone. */
export interface OwnTopic {
  readonly topic: string;
  readonly deadLetterTopic: string;
  readonly groupId: string;
}

export async function ownTopic(s: KafkaSuite, label: string, partitions: number): Promise<OwnTopic> {
  const run = randomBytes(4).toString('hex');
  const topic = `${label}.${run}`;
  await createTopics(s.kafka, [{ topic, numPartitions: partitions }, { topic: `${topic}.dlq`, numPartitions: 1 }]);
  return { topic, deadLetterTopic: `${topic}.dlq`, groupId: `${label}-${run}` };
}

/**
 * The gateway's ingest consumer, in this process, on a topic of its own and the suite's real
 * store (so its events show in the suite gateway's feed), with the suite gateway's ingest
 * settings unless `overrides` says otherwise.
 */
export function ownIngestConsumer(
  s: KafkaSuite,
  own: OwnTopic,
  transport: SqlTransport,
  metrics: GatewayMetrics,
  logger: Logger,
  overrides: Partial<IngestConsumerOptions> = {},
): IngestConsumer {
  const { ingest, kafka } = s.gateway.config;
  return createIngestConsumer({
    kafka: s.kafka,
    metrics,
    groupId: own.groupId,
    sources: [{ topic: own.topic, format: 'canonical-event' }],
    deadLetterTopic: own.deadLetterTopic,
    deadLetterMaxBytes: KAFKA_DEFAULT_MAX_MESSAGE_BYTES,
    ingestor: createEventIngestor({ store: createClickHouseEventStore(transport), schemas: createSchemaRegistry() }),
    batchSize: ingest.batchSize,
    batchBytes: ingest.batchBytes,
    batchWaitMs: ingest.batchWaitMs,
    maxInFlightEvents: ingest.maxInFlightEvents,
    maxInFlightBytes: ingest.maxInFlightBytes,
    fetchPartitionBytes: ingest.fetchPartitionBytes,
    stallMs: ingest.stallMs,
    sessionTimeoutMs: kafka!.sessionTimeoutMs,
    metadataMaxAgeMs: ingest.metadataMaxAgeMs,
    logger,
    ...overrides,
  });
}

/**
 * The hooks of a suite whose tests each run an ingest consumer of their own: a second
 * connection to the suite's store, opened once, and the consumer a test started, stopped
 * after it whatever its outcome. `started` hands a test's consumer over to be stopped.
 */
export function ownConsumerHooks(suite: () => KafkaSuite): { transport: () => SqlTransport; started: (consumer: IngestConsumer) => IngestConsumer } {
  let transport: SqlTransport | undefined;
  let consumer: IngestConsumer | undefined;
  before(async () => {
    transport = await openStore(suite().gateway.config);
  });
  afterEach(async () => {
    await consumer?.stop();
    consumer = undefined;
  });
  after(async () => {
    await transport?.close();
  });
  return {
    transport: () => transport!,
    started: (c) => (consumer = c),
  };
}

/** The ids on the first page (200) of the tenant's feed, newest first. */
export async function feedIds(s: KafkaSuite, tenant: Tenant): Promise<string[]> {
  const res = await s.gateway.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events?limit=200`, { headers: await tenant.headers() });
  if (res.status !== 200) throw new Error(`the feed answered ${res.status}: ${res.text}`);
  return res.body.data.items.map((e) => e.id);
}

/** Sends `events` to one partition of `topic`, acknowledged by every in-sync replica. */
export async function sendTo(kafka: Kafka, topic: string, partition: number, events: readonly CanonicalEvent[]): Promise<void> {
  const producer = kafka.producer();
  await producer.connect();
  try {
    await producer.send({ topic, acks: -1, messages: events.map((e) => ({ partition, key: e.device_id!, value: JSON.stringify(e) })) });
  } finally {
    await producer.disconnect();
  }
}
