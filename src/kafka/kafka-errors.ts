import { AppError } from '../errors.js';

/**
 * The one place kafkajs errors are read. Every failure to get a command acknowledged is
 * a 503: the client may retry (with an Idempotency-Key to stay safe).
 */
export function toKafkaError(error: unknown, operation: string): AppError {
  if (error instanceof AppError) return error;
  return new AppError('UPSTREAM_UNAVAILABLE', `Kafka unavailable during ${operation}`, {
    detail: 'The message broker is temporarily unavailable; retry shortly.',
    cause: error,
  });
}
