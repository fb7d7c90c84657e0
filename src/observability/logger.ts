import { pino, type Logger } from 'pino';

export type { Logger };

const REDACTED_FIELDS = ['authorization', 'cookie', 'token', 'secret', 'password', 'body', 'payload', 'patch'];

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
        // A field of these names is censored wherever it sits, up to two levels down.
        paths: REDACTED_FIELDS.flatMap((name) => [name, `*.${name}`, `*.*.${name}`]),
        censor: '[redacted]',
      },
    },
    destination ?? process.stdout,
  );
}
