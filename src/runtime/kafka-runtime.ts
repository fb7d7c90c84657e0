import type { Kafka } from 'kafkajs';
import { createKafkaCommandPublisher } from '../commands/kafka-command-publisher.js';
import type { CommandPublisher } from '../commands/command-publisher.js';
import type { Config, KafkaConfig } from '../config.js';
import { createIngestConsumer, type IngestConsumer } from '../ingest/kafka-ingest-consumer.js';
import type { EventIngestor } from '../ingest/event-ingestor.js';
import { createKafkaClient } from '../kafka/kafka-client.js';
import { ensureTopics } from '../kafka/topics.js';
import type { Logger } from '../logger.js';
import type { GatewayMetrics } from '../metrics/gateway-metrics.js';

/** Connects to Kafka and creates the topics of the contract that are missing. */
export async function openKafka(config: Config, kafkaConfig: KafkaConfig, logger: Logger): Promise<Kafka> {
  const kafka = createKafkaClient(kafkaConfig, logger);
  const admin = kafka.admin();
  await admin.connect();
  try {
    const created = await ensureTopics(admin, {
      names: [...config.topics.events, config.topics.enrollmentCommands, config.topics.edgePolicyCommands, config.topics.deadLetter],
      partitions: kafkaConfig.partitions,
      replicationFactor: kafkaConfig.replicationFactor,
    });
    if (created.length > 0) logger.info({ topics: created }, 'created missing topics');
  } finally {
    await admin.disconnect();
  }
  return kafka;
}

export function kafkaCommandPublisher(kafka: Kafka, config: Config, kafkaConfig: KafkaConfig, metrics: GatewayMetrics, logger: Logger): CommandPublisher {
  return createKafkaCommandPublisher({
    kafka,
    metrics,
    producers: kafkaConfig.producers,
    timeoutMs: config.commandTimeoutMs,
    logger,
  });
}

export async function startIngestConsumer(
  kafka: Kafka,
  config: Config,
  kafkaConfig: KafkaConfig,
  ingestor: EventIngestor,
  metrics: GatewayMetrics,
  logger: Logger,
): Promise<IngestConsumer> {
  const consumer = createIngestConsumer({
    kafka,
    metrics,
    groupId: kafkaConfig.consumerGroup,
    sources: [
      ...config.topics.events.map((topic) => ({ topic, format: 'canonical-event' as const })),
      { topic: config.topics.enrollmentCommands, format: 'enrollment-command' as const },
      { topic: config.topics.edgePolicyCommands, format: 'edge-policy-command' as const },
    ],
    deadLetterTopic: config.topics.deadLetter,
    ingestor,
    batchSize: config.ingest.batchSize,
    batchWaitMs: config.ingest.batchWaitMs,
    sessionTimeoutMs: kafkaConfig.sessionTimeoutMs,
    logger,
  });
  await consumer.start();
  return consumer;
}
