import { parseDeadLetterTopic } from '../ingest/ingest-settings.js';
import { parseKafkaSecurity } from '../kafka/kafka-security-config.js';
import { parseBrokers, parseKafka, type KafkaConfig } from '../kafka/kafka-settings.js';
import { ConfigError } from '../settings/config-error.js';
import { optional, type Env } from '../settings/env.js';

export interface DlqSettings {
  readonly kafka: KafkaConfig;
  readonly deadLetterTopic: string;
  readonly logLevel: string;
}

/**
 * The tool's settings, read by the gateway's own parsers from the same variables, so a
 * command run beside a gateway (or in its image) reaches the same cluster the same way,
 * TLS and SASL included.
 */
export function parseDlqSettings(env: Env): DlqSettings {
  const brokers = parseBrokers(env);
  if (brokers === undefined) throw new ConfigError('KAFKA_BROKERS', 'is required: the dead-letter topic lives on Kafka');
  const kafka = parseKafka(env, brokers, parseKafkaSecurity(env, true));
  if (kafka === undefined) throw new ConfigError('KAFKA_BROKERS', 'is required');
  return { kafka, deadLetterTopic: parseDeadLetterTopic(env), logLevel: optional(env, 'LOG_LEVEL') ?? 'warn' };
}
