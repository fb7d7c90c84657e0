import type { Kafka } from 'kafkajs';
import { commandFormat, commandTopics } from '../commands/catalogue.js';
import { createKafkaCommandPublisher } from '../commands/kafka-command-publisher.js';
import type { CommandPublisher } from '../commands/command-publisher.js';
import type { Config, KafkaConfig } from '../config/config.js';
import { createIngestConsumer, type IngestConsumer } from '../ingest/kafka-ingest-consumer.js';
import type { EventIngestor } from '../ingest/event-ingestor.js';
import { createKafkaClient } from '../kafka/kafka-client.js';
import { kafkaSecurityWarnings } from '../kafka/kafka-security.js';
import { fetchPartitionBytes, limitOf, readMessageLimits, type MessageLimits } from '../kafka/message-bytes.js';
import { firstContact, requireTopics, startupFailure } from '../kafka/kafka-start-checks.js';
import { replicationFor, replicationShortfalls } from '../kafka/replication.js';
import { ensureTopics } from '../kafka/topics.js';
import type { Logger } from '../observability/logger.js';
import type { GatewayMetrics } from '../metrics/gateway-metrics.js';
import { topicsOfRole } from './topics-of-role.js';

/** The configuration of a process that runs on Kafka: KAFKA_BROKERS is set. */
export type KafkaRuntimeConfig = Config & { readonly kafka: KafkaConfig };

export function runsOnKafka(config: Config): config is KafkaRuntimeConfig {
  return config.kafka !== undefined;
}

/** A connected Kafka client, and what the brokers said at start that the writers need. */
export interface OpenedKafka {
  readonly kafka: Kafka;
  /** max.message.bytes of each topic the role reads or writes. */
  readonly messageLimits: MessageLimits;
}

/**
 * Connects to Kafka and creates the topics of the contract that are missing, replicated as
 * configured or, where that is unset, as the cluster's size allows. Warns once when a topic
 * the gateway writes is replicated less than that, and reads how large a batch each topic
 * of its role takes (written, and read: a fetch must take the largest whole). Only the
 * topics of the process's role are checked, so each role needs ACLs on its own topics
 * only; a refusal by the brokers (credentials, certificate, host name, ACLs) fails the
 * start as a StartupError naming it, except DescribeConfigs on a topic read, which the
 * contract does not grant (docs/kafka-contract.md): its limit is then Kafka's default.
 */
export async function openKafka(config: KafkaRuntimeConfig, logger: Logger): Promise<OpenedKafka> {
  const kafkaConfig = config.kafka;
  for (const { variable, message } of kafkaSecurityWarnings(kafkaConfig)) logger.warn({ variable }, message);
  const kafka = createKafkaClient(kafkaConfig, logger);
  await firstContact(kafkaConfig, logger);
  const topics = topicsOfRole(config);
  const admin = kafka.admin();
  await admin.connect().catch((error: unknown) => {
    throw startupFailure(error, kafkaConfig);
  });
  let messageLimits: MessageLimits;
  try {
    const { brokers } = await admin.describeCluster();
    const replication = replicationFor(kafkaConfig, brokers.length);
    logger.info({ brokers: brokers.length, ...replication }, 'replication of the topics the gateway creates');
    if (!kafkaConfig.createTopics) await requireTopics(admin, topics.used);
    const created = await ensureTopics(admin, {
      names: topics.used,
      partitions: kafkaConfig.partitions,
      ...replication,
    });
    if (created.length > 0) logger.info({ topics: created }, 'created missing topics');
    // Advice for the operator, not a condition of starting.
    const short = await replicationShortfalls(admin, topics.written, replication).catch((error: unknown) => {
      logger.warn({ err: error }, 'could not check the replication of the topics the gateway writes');
      return [];
    });
    if (short.length > 0) {
      logger.warn({ topics: short, wanted: replication }, 'topics the gateway writes are replicated less than it asks for; acknowledged writes may sit on fewer brokers');
    }
    const read = topics.used.filter((topic) => !topics.written.includes(topic));
    messageLimits = new Map([
      ...(await readMessageLimits(admin, topics.written, logger)),
      ...(read.length === 0 ? [] : await readMessageLimits(admin, read, logger, 'info')),
    ]);
  } catch (error) {
    throw startupFailure(error, kafkaConfig);
  } finally {
    await admin.disconnect();
  }
  return { kafka, messageLimits };
}

export function kafkaCommandPublisher(opened: OpenedKafka, config: KafkaRuntimeConfig, metrics: GatewayMetrics, logger: Logger): CommandPublisher {
  const topics = commandTopics(config.topics).map(({ topic }) => topic);
  // Reported at zero from the start: rate() cannot see the first error of a series that appears with it, nor can the alert on it.
  for (const topic of topics) metrics.produceErrors.inc({ topic }, 0);
  return createKafkaCommandPublisher({
    kafka: opened.kafka,
    metrics,
    producers: config.kafka.producers,
    timeoutMs: config.commandTimeoutMs,
    messageLimits: new Map(topics.map((topic) => [topic, limitOf(opened.messageLimits, topic)])),
    compression: config.kafka.compression,
    logger,
  });
}

export async function startIngestConsumer(
  opened: OpenedKafka,
  config: KafkaRuntimeConfig,
  ingestor: EventIngestor,
  metrics: GatewayMetrics,
  logger: Logger,
): Promise<IngestConsumer> {
  const sources = [
    ...config.topics.events.map((topic) => ({ topic, format: 'canonical-event' as const })),
    ...commandTopics(config.topics).map(({ entry, topic }) => ({ topic, format: commandFormat(entry) })),
  ];
  const consumer = createIngestConsumer({
    kafka: opened.kafka,
    metrics,
    groupId: config.kafka.consumerGroup,
    sources,
    deadLetterTopic: config.topics.deadLetter,
    deadLetterMaxBytes: limitOf(opened.messageLimits, config.topics.deadLetter),
    stallMs: config.ingest.stallMs,
    ingestor,
    batchSize: config.ingest.batchSize,
    batchBytes: config.ingest.batchBytes,
    batchWaitMs: config.ingest.batchWaitMs,
    maxInFlightEvents: config.ingest.maxInFlightEvents,
    maxInFlightBytes: config.ingest.maxInFlightBytes,
    maxBufferedBytes: config.ingest.maxBufferedBytes,
    fetchPartitionBytes: fetchPartitionBytes(config.ingest.fetchPartitionBytes, opened.messageLimits, sources.map(({ topic }) => topic)),
    compression: config.kafka.compression,
    sessionTimeoutMs: config.kafka.sessionTimeoutMs,
    metadataMaxAgeMs: config.ingest.metadataMaxAgeMs,
    transactionalIdPrefix: config.ingest.transactionalIdPrefix,
    logger,
  });
  await consumer.start();
  return consumer;
}
