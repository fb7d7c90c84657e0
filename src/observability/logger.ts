import { pino, type Logger } from 'pino';
import { fieldCensor } from './redact.js';

export type { Logger };

const CENSOR = '[redacted]';
/** Lines are written once this many bytes wait, or every LOG_FLUSH_MS, whichever comes first. */
const LOG_BUFFER_BYTES = 4096;
const LOG_FLUSH_MS = 100;
const REDACTED_FIELDS = ['authorization', 'cookie', 'token', 'secret', 'password', 'body', 'payload', 'patch'];

/**
 * Structured JSON logs. Tokens, keys and bodies are redacted by default: request bodies
 * and event payloads are customer data and never belong in logs.
 *
 * Lines go to standard output through pino's asynchronous destination: a line is queued
 * and written with whatever else was logged meanwhile, instead of one blocking write per
 * line (standard output to a pipe or a file is synchronous in Node). Under load that is a
 * few writes a tick instead of one per request; when idle, a line is written at once. A
 * process that exits flushes what is queued (pino does it on exit); one killed outright
 * loses at most the lines of its last moments.
 */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  // A field of these names is censored wherever it sits in a line, up to two levels down;
  // pino's own redaction, by exact name, covers a child logger's bindings, which pino
  // passes by the line's formatter.
  return pino(
    {
      level,
      base: { service: 'core-gateway' },
      formatters: { log: fieldCensor(REDACTED_FIELDS, 2, CENSOR) },
      redact: { paths: REDACTED_FIELDS, censor: CENSOR },
    },
    destination ?? pino.destination({ dest: 1, sync: false, minLength: LOG_BUFFER_BYTES, periodicFlush: LOG_FLUSH_MS }),
  );
}
