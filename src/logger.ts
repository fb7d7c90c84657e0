import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * Structured JSON logs. Tokens, keys and bodies are redacted by default: request bodies
 * and event payloads are customer data and never belong in logs.
 */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: { service: 'core-gateway' },
      redact: {
        paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'token', 'secret', 'body', 'payload'],
        censor: '[redacted]',
      },
    },
    destination ?? process.stdout,
  );
}
