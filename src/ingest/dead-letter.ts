import type { Message } from 'kafkajs';
import type { RejectedMessage } from './event-ingestor.js';

/** How much of a value (and of a key) a dead-letter reference keeps: enough to recognise it. */
export const REFERENCE_PREFIX_BYTES = 1024;

const DETAIL_LIMIT = 1000;

function provenance(rejected: RejectedMessage): Record<string, string> {
  const { message, reason, detail } = rejected;
  const headers: Record<string, string> = { 'dlq-reason': reason, 'dlq-detail': detail.slice(0, DETAIL_LIMIT) };
  if (message.source !== undefined) {
    headers['dlq-source-topic'] = message.source.topic;
    headers['dlq-source-partition'] = String(message.source.partition);
    headers['dlq-source-offset'] = message.source.offset;
  }
  return headers;
}

/**
 * A rejected event as it goes to the dead-letter topic: key, value and headers as they
 * were received, plus headers that say why and where from, so it can be fixed and replayed.
 */
export function deadLetterMessage(rejected: RejectedMessage): Message {
  const { message } = rejected;
  return { key: message.key ?? null, value: message.value, headers: { ...message.headers, ...provenance(rejected) } };
}

const prefix = (value: Buffer | string | null | undefined): Buffer | null => {
  if (value === null || value === undefined) return null;
  const bytes = typeof value === 'string' ? Buffer.from(value) : value;
  return bytes.length <= REFERENCE_PREFIX_BYTES ? bytes : bytes.subarray(0, REFERENCE_PREFIX_BYTES);
};

/**
 * A dead letter for a message too large to go to the dead-letter topic whole (its own
 * headers, or a topic with a smaller limit than its source's, can tip it over): where it
 * lies on its source topic, why it was refused, its size, and the first bytes of its key
 * and value. Its own headers are left out, since they may be what made it too large. The
 * message itself stays on its source topic, at that offset, for as long as the topic
 * keeps it.
 */
export function deadLetterReference(rejected: RejectedMessage): Message {
  const { message } = rejected;
  const size = (v: Buffer | string | null | undefined) => (v === null || v === undefined ? 0 : typeof v === 'string' ? Buffer.byteLength(v) : v.length);
  const headers = provenance(rejected);
  headers['dlq-truncated'] = 'true';
  headers['dlq-original-value-bytes'] = String(size(message.value));
  headers['dlq-original-key-bytes'] = String(size(message.key));
  return { key: prefix(message.key), value: prefix(message.value), headers };
}
