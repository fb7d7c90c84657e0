import type { Kafka, Message, Producer } from 'kafkajs';
import { partitionLedger, sendCompletely } from '../kafka/complete-send.js';
import { compressionType, type CompressionName } from '../kafka/compression-codecs.js';
import { recordBytes, sendBudget } from '../kafka/message-bytes.js';
import type { Logger } from '../observability/logger.js';
import { deadLetterMessage, deadLetterReference } from './dead-letter.js';
import type { RejectedMessage } from './event-ingestor.js';

export interface DeadLetterWriterOptions {
  readonly kafka: Kafka;
  readonly topic: string;
  /** The dead-letter topic's max.message.bytes, read at start. */
  readonly maxMessageBytes: number;
  /** The codec of every record batch sent (KAFKA_COMPRESSION). */
  readonly compression: CompressionName;
  readonly logger: Logger;
}

export interface DeadLetterWriter {
  start(): Promise<void>;
  /** Resolves once every rejected message is on the dead-letter topic, acknowledged by all in-sync replicas. */
  write(rejected: readonly RejectedMessage[]): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Cuts the letters into sends of at most `budget` bytes each, in order. A single letter
 * over the budget becomes a reference to its source message, so that it can never be
 * refused for its size, nor take a send of others down with it.
 */
export function deadLetterSends(rejected: readonly RejectedMessage[], budget: number): { readonly sends: Message[][]; readonly references: number } {
  const sends: Message[][] = [];
  let current: Message[] = [];
  let bytes = 0;
  let references = 0;
  for (const r of rejected) {
    let letter = deadLetterMessage(r);
    let size = recordBytes(letter);
    if (size > budget) {
      letter = deadLetterReference(r);
      size = recordBytes(letter);
      references += 1;
    }
    if (current.length > 0 && bytes + size > budget) {
      sends.push(current);
      current = [];
      bytes = 0;
    }
    current.push(letter);
    bytes += size;
  }
  if (current.length > 0) sends.push(current);
  return { sends, references };
}

/**
 * Writes dead letters with one idempotent producer, each send under the topic's byte
 * limit. A send that kafkajs acknowledges without some of its partitions is completed
 * (src/kafka/complete-send.ts): a dead letter lost after its offset is committed would be
 * an event lost.
 */
export function createDeadLetterWriter(options: DeadLetterWriterOptions): DeadLetterWriter {
  const logger = options.logger.child({ module: 'dead-letters' });
  const ledger = partitionLedger();
  const producer: Producer = options.kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: ledger.createPartitioner });
  const budget = sendBudget(options.maxMessageBytes);

  return {
    start: () => producer.connect(),
    async write(rejected) {
      const { sends, references } = deadLetterSends(rejected, budget);
      if (references > 0) logger.warn({ references, maxMessageBytes: options.maxMessageBytes }, 'dead letters too large for their topic sent as references to their source');
      for (const messages of sends) {
        await sendCompletely(producer, ledger, { acks: -1, compression: compressionType(options.compression), topicMessages: [{ topic: options.topic, messages }] }, (missing) =>
          logger.warn({ missing }, 'kafkajs acknowledged a send without some of its partitions; sending those again'),
        );
      }
    },
    stop: () => producer.disconnect(),
  };
}
