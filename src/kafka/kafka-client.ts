import { Kafka, logLevel, type LogEntry, type logCreator, type RetryOptions } from 'kafkajs';
import type { KafkaConfig } from './kafka-settings.js';
import type { Logger } from '../observability/logger.js';
import { registerCompressionCodecs } from './compression-codecs.js';
import { kafkaJsSecurityOptions } from './kafka-security.js';

// kafkajs reports expected reconnects at ERROR; for an operator they are warnings.
const LEVELS: Readonly<Record<number, 'warn' | 'info' | 'debug'>> = {
  [logLevel.ERROR]: 'warn',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/** Routes kafkajs's own logs into our structured logger. */
function pinoLogCreator(logger: Logger): logCreator {
  const kafkaLogger = logger.child({ module: 'kafkajs' });
  return () => (entry: LogEntry) => {
    const { message, ...fields } = entry.log;
    kafkaLogger[LEVELS[entry.level] ?? 'info']({ namespace: entry.namespace, ...fields }, message);
  };
}

/**
 * For a client that must not retry a failed connection: kafkajs retries connections on the
 * client, whatever an admin or producer of it is told.
 */
export const ONE_ATTEMPT: RetryOptions = { retries: 0 };

/** Connects and retries a failed connection as kafkajs does by default, unless `retry` says otherwise. */
export function createKafkaClient(config: KafkaConfig, logger: Logger, retry?: RetryOptions): Kafka {
  // Every client of ours reads (and may write) every codec Kafka defines, not gzip alone.
  registerCompressionCodecs();
  return new Kafka({
    clientId: config.clientId,
    brokers: [...config.brokers],
    logLevel: logLevel.WARN,
    logCreator: pinoLogCreator(logger),
    connectionTimeout: 3000,
    requestTimeout: 10_000,
    ...kafkaJsSecurityOptions(config),
    ...(retry === undefined ? {} : { retry }),
  });
}
