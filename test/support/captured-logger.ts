import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/observability/logger.js';

/** A logger of the production kind (pino, redacted) whose lines a test reads back, parsed. */
export interface CapturedLogger {
  readonly logger: Logger;
  readonly lines: readonly Record<string, unknown>[];
}

export function capturedLogger(level = 'info'): CapturedLogger {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger(level, sink), lines };
}
