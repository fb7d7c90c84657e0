import type { Kafka } from 'kafkajs';
import { createKafkaCommandPublisher } from '../commands/kafka-command-publisher.js';
import type { CommandPublisher } from '../commands/command-publisher.js';
import type { Config, KafkaConfig } from '../config/config.js';
import { createIngestConsumer, type IngestConsumer } from '../ingest/kafka-ingest-consumer.js';
import type { EventIngestor } from '../ingest/event-ingestor.js';
import { createKafkaClient } from '../kafka/kafka-client.js';
import { kafkaSecurityWarnings } from '../kafka/kafka-security.js';
import { firstContact, requireTopics, startupFailure, topicsOfRole } from '../kafka/kafka-start-checks.js';
import { replicationFor, replicationShortfalls } from '../kafka/replication.js';
import { ensureTopics } from '../kafka/topics.js';
import type { Logger } from '../observability/logger.js';
import type { GatewayMetrics } from '../metrics/gateway-metrics.js';

/** The configuration of a process that runs on Kafka: KAFKA_BROKERS is set. */
export type KafkaRuntimeConfig = Config & { readonly kafka: KafkaConfig };

export function runsOnKafka(config: Config): config is KafkaRuntimeConfig {
  return config.kafka !== undefined;
}

/**
 * Connects to Kafka and creates the topics of the contract that are missing, replicated as
 * configured or, where that is unset, as the cluster's size allows. Warns once when a topic
 * the gateway writes is replicated less than that. Only the topics of the process's role are
 * checked, so each role needs ACLs on its own topics only; a refusal by the brokers
 * (credentials, certificate, host name, ACLs) fails the start as a StartupError naming it.
 */
export async function openKafka(config: KafkaRuntimeConfig, logger: Logger): Promise<Kafka> {
  const kafkaConfig = config.kafka;
  for (const { variable, message } of kafkaSecurityWarnings(kafkaConfig)) logger.warn({ variable }, message);
  const kafka = createKafkaClient(kafkaConfig, logger);
  await firstContact(kafkaConfig, logger);
  const topics = topicsOfRole(config);
  const admin = kafka.admin();
  await admin.connect().catch((error: unknown) => {
    throw startupFailure(error, kafkaConfig);
  });
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
  } catch (error) {
    throw startupFailure(error, kafkaConfig);
  } finally {
    await admin.disconnect();
  }
  return kafka;
}

export function kafkaCommandPublisher(kafka: Kafka, config: KafkaRuntimeConfig, metrics: GatewayMetrics, logger: Logger): CommandPublisher {
  return createKafkaCommandPublisher({
    kafka,
    metrics,
    producers: config.kafka.producers,
    timeoutMs: config.commandTimeoutMs,
    logger,
  });
}

export async function startIngestConsumer(
  kafka: Kafka,
  config: KafkaRuntimeConfig,
  ingestor: EventIngestor,
  metrics: GatewayMetrics,
  logger: Logger,
): Promise<IngestConsumer> {
  const consumer = createIngestConsumer({
    kafka,
    metrics,
    groupId: config.kafka.consumerGroup,
    sources: [
      ...config.topics.events.map((topic) => ({ topic, format: 'canonical-event' as const })),
      { topic: config.topics.enrollmentCommands, format: 'enrollment-command' as const },
      { topic: config.topics.edgePolicyCommands, format: 'edge-policy-command' as const },
    ],
    deadLetterTopic: config.topics.deadLetter,
    ingestor,
    batchSize: config.ingest.batchSize,
    batchWaitMs: config.ingest.batchWaitMs,
    maxInFlightEvents: config.ingest.maxInFlightEvents,
    sessionTimeoutMs: config.kafka.sessionTimeoutMs,
    logger,
  });
  await consumer.start();
  return consumer;
}
