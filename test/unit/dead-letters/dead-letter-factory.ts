import type { IHeaders, KafkaMessage } from 'kafkajs';
import { canonicalEvent } from '../../support/factories.js';

/** A dead letter as src/ingest/dead-letter.ts writes it, read back as kafkajs hands it over. */
export function deadLetterRecord(options: { value?: Buffer | null; reason?: string; headers?: IHeaders; timestamp?: string; offset?: string } = {}): KafkaMessage {
  return {
    key: Buffer.from('a-key'),
    value: options.value === undefined ? Buffer.from(JSON.stringify(canonicalEvent())) : options.value,
    timestamp: options.timestamp ?? String(Date.parse('2026-05-01T10:30:00Z')),
    attributes: 0,
    offset: options.offset ?? '0',
    headers: {
      'dlq-reason': options.reason ?? 'invalid-json',
      'dlq-detail': 'what was wrong',
      'dlq-source-topic': 'platform.events',
      'dlq-source-partition': '2',
      'dlq-source-offset': '40',
      ...options.headers,
    },
  };
}

/** `payload` behind Confluent's wire-format prefix: magic byte 0, then a 4-byte schema id. */
export function confluentFramed(payload: Buffer, schemaId = 7): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(schemaId, 1);
  return Buffer.concat([prefix, payload]);
}
