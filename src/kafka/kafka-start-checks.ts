import type { Admin } from 'kafkajs';
import type { KafkaConfig } from './kafka-settings.js';
import type { Logger } from '../observability/logger.js';
import { StartupError } from '../errors/startup-error.js';
import { ONE_ATTEMPT, createKafkaClient } from './kafka-client.js';
import { kafkaRefusal } from './kafka-errors.js';
import type { KafkaSecurityConfig } from './kafka-security-config.js';

/** A refusal met during start, as a StartupError naming it; anything else unchanged. */
export function startupFailure(error: unknown, security: KafkaSecurityConfig): unknown {
  const refusal = kafkaRefusal(error, security);
  return refusal === undefined ? error : new StartupError(`Kafka: ${refusal}`, { cause: error });
}

/**
 * One connection attempt, without retries, before the retrying clients: wrong credentials,
 * an untrusted certificate or a wrong host name do not get better by retrying, so the start
 * fails at once and says which. Anything else (a broker still starting) is left to the
 * clients' own retries.
 */
export async function firstContact(config: KafkaConfig, logger: Logger): Promise<void> {
  const admin = createKafkaClient(config, logger, ONE_ATTEMPT).admin();
  try {
    await admin.connect();
  } catch (error) {
    const failure = startupFailure(error, config);
    if (failure instanceof StartupError) throw failure;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** With KAFKA_CREATE_TOPICS=false the topics must be there already, created by whoever owns the cluster. */
export async function requireTopics(admin: Admin, names: readonly string[]): Promise<void> {
  const existing = new Set(await admin.listTopics());
  const missing = [...new Set(names)].filter((name) => !existing.has(name));
  if (missing.length > 0) {
    throw new StartupError(
      `Kafka: topic(s) ${missing.join(', ')} not found; with KAFKA_CREATE_TOPICS=false they must be created beforehand, and this user needs DESCRIBE on them to see them`,
    );
  }
}
