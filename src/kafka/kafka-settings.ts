import { ConfigError } from '../settings/config-error.js';
import { flag, integer, list, oneOf, optional, optionalInteger, type Env } from '../settings/env.js';
import { COMPRESSION_NAMES, type CompressionName } from './compression-codecs.js';
import type { KafkaSecurityConfig } from './kafka-security-config.js';

/** With `ssl` and `sasl` (KAFKA_SSL..., KAFKA_SASL...: src/kafka/kafka-security-config.ts). */
export interface KafkaConfig extends KafkaSecurityConfig {
  readonly brokers: readonly string[];
  readonly clientId: string;
  readonly consumerGroup: string;
  /** Partitions of topics the gateway creates when they are missing. */
  readonly partitions: number;
  /**
   * Replication factor and min.insync.replicas of topics the gateway creates
   * (KAFKA_REPLICATION_FACTOR, KAFKA_MIN_INSYNC_REPLICAS); undefined is decided at start
   * from the number of brokers (src/kafka/replication.ts).
   */
  readonly replicationFactor: number | undefined;
  readonly minInsyncReplicas: number | undefined;
  /** Idempotent producers per gateway process that send side by side (KAFKA_PRODUCERS). */
  readonly producers: number;
  /** How long the group waits for a silent ingest consumer before its partitions move to another (KAFKA_SESSION_TIMEOUT_MS). */
  readonly sessionTimeoutMs: number;
  /** Whether missing topics are created at start (KAFKA_CREATE_TOPICS); otherwise their absence stops the start. */
  readonly createTopics: boolean;
  /** The codec of the record batches the gateway writes: commands and dead letters (KAFKA_COMPRESSION). */
  readonly compression: CompressionName;
}

const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/;

/** Whether Kafka takes this as a topic name. */
export function isTopicName(name: string): boolean {
  return TOPIC_NAME.test(name);
}

/** A topic name from the variable, or `fallback` when it is unset. */
export function topicName(env: Env, name: string, fallback: string): string {
  const value = optional(env, name) ?? fallback;
  if (!isTopicName(value)) throw new ConfigError(name, `"${value}" is not a valid Kafka topic name`);
  return value;
}

/** KAFKA_BROKERS: host:port, comma-separated; undefined when unset (the in-process bus). */
export function parseBrokers(env: Env): string[] | undefined {
  const brokers = list(env, 'KAFKA_BROKERS');
  for (const broker of brokers ?? []) {
    if (!/^[^:\s]+:\d{1,5}$/.test(broker)) throw new ConfigError('KAFKA_BROKERS', `"${broker}" is not host:port`);
  }
  return brokers;
}

function parseReplication(env: Env): Pick<KafkaConfig, 'replicationFactor' | 'minInsyncReplicas'> {
  const replicationFactor = optionalInteger(env, 'KAFKA_REPLICATION_FACTOR', 1, 16);
  const minInsyncReplicas = optionalInteger(env, 'KAFKA_MIN_INSYNC_REPLICAS', 1, 16);
  // More required acknowledgements than copies would refuse every write.
  if (replicationFactor !== undefined && minInsyncReplicas !== undefined && minInsyncReplicas > replicationFactor) {
    throw new ConfigError('KAFKA_MIN_INSYNC_REPLICAS', `must not exceed KAFKA_REPLICATION_FACTOR (${replicationFactor}), got ${minInsyncReplicas}`);
  }
  return { replicationFactor, minInsyncReplicas };
}

/** The Kafka client's settings with these brokers and this security (src/kafka/kafka-security-config.ts); undefined without brokers. */
export function parseKafka(env: Env, brokers: readonly string[] | undefined, security: KafkaSecurityConfig): KafkaConfig | undefined {
  if (brokers === undefined) return undefined;
  return {
    brokers,
    clientId: optional(env, 'KAFKA_CLIENT_ID') ?? 'core-gateway',
    consumerGroup: optional(env, 'KAFKA_CONSUMER_GROUP') ?? 'core-gateway-ingest',
    partitions: integer(env, 'KAFKA_TOPIC_PARTITIONS', 6, 1, 10_000),
    ...parseReplication(env),
    producers: integer(env, 'KAFKA_PRODUCERS', 1, 1, 64),
    compression: oneOf(env, 'KAFKA_COMPRESSION', COMPRESSION_NAMES, 'none'),
    // Brokers refuse sessions under group.min.session.timeout.ms, 6 s by default.
    sessionTimeoutMs: integer(env, 'KAFKA_SESSION_TIMEOUT_MS', 10_000, 6000, 1_800_000),
    createTopics: flag(env, 'KAFKA_CREATE_TOPICS', true),
    ...security,
  };
}
