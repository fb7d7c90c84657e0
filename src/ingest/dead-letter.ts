import type { Message } from 'kafkajs';
import type { RejectedMessage } from './event-ingestor.js';

/**
 * A rejected event as it goes to the dead-letter topic: key, value and headers as they
 * were received, plus headers that say why and where from, so it can be fixed and replayed.
 */
export function deadLetterMessage(rejected: RejectedMessage): Message {
  const { message, reason, detail } = rejected;
  const headers: Record<string, string | Buffer> = { ...message.headers };
  headers['dlq-reason'] = reason;
  headers['dlq-detail'] = detail.slice(0, 1000);
  if (message.source !== undefined) {
    headers['dlq-source-topic'] = message.source.topic;
    headers['dlq-source-partition'] = String(message.source.partition);
    headers['dlq-source-offset'] = message.source.offset;
  }
  return { key: message.key ?? null, value: message.value, headers };
}
