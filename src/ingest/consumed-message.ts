import type { KafkaMessage } from 'kafkajs';
import type { MessageFormat, MessageSource, RawEventMessage } from './event-ingestor.js';
import { firstHeaderValues } from './message-headers.js';

/**
 * A fetched message as the ingestor reads it. Its headers and its source are built only
 * when something asks for them (a dead letter, a command's log line): building both for
 * every message made three objects per event where one will do, and the garbage collector
 * was a quarter of the consumer's CPU.
 */
export class ConsumedMessage implements RawEventMessage {
  readonly value: Buffer | null;
  readonly key: Buffer | null;
  #headers: Readonly<Record<string, Buffer | string>> | undefined;

  constructor(
    readonly format: MessageFormat,
    private readonly message: KafkaMessage,
    private readonly topic: string,
    private readonly partition: number,
  ) {
    this.value = message.value;
    this.key = message.key;
  }

  get headers(): Readonly<Record<string, Buffer | string>> {
    return (this.#headers ??= firstHeaderValues(this.message.headers));
  }

  /** The Kafka timestamp: how old the event is when the store takes it (src/ingest/freshness.ts). */
  get timestamp(): string {
    return this.message.timestamp;
  }

  get source(): MessageSource {
    return { topic: this.topic, partition: this.partition, offset: this.message.offset };
  }
}
