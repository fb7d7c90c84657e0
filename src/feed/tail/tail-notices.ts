import { AppError } from '../../errors/app-error.js';
import type { ClosingNotice } from './live-tail-types.js';

// A slot frees only when a stream closes; retrying at once would just be refused again.
const FULL_RETRY_AFTER_SECONDS = 5;

export const SLOW_READER_NOTICE: ClosingNotice = {
  message: 'Client too slow',
  detail: 'This client read more slowly than its events came, so the gateway closed the stream. Reconnect with Last-Event-ID to resume after the last event received.',
};

export const SHUTDOWN_NOTICE: ClosingNotice = {
  message: 'Shutting down',
  detail: 'This gateway is shutting down. Reconnect with Last-Event-ID to resume after the last event received.',
};

/** A stream asked for while the gateway closes. */
export function shuttingDown(): AppError {
  return new AppError('UPSTREAM_UNAVAILABLE', 'Shutting down', { detail: 'This gateway is shutting down; reconnect to continue.' });
}

/** A stream refused by a cap: a 429 with Retry-After. */
export function tooManyStreams(detail: string): AppError {
  return new AppError('TOO_MANY_STREAMS', 'Too many streams', { detail, retryAfterSeconds: FULL_RETRY_AFTER_SECONDS });
}
