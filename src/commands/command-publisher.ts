import type { GatewayCommand } from './command-event.js';

/** One command as it goes onto its topic. */
export interface CommandMessage {
  readonly topic: string;
  /** Partition key: device_id for enrollments, fleet_id for edge policy, so each stays ordered. */
  readonly key: string;
  readonly commandId: string;
  readonly value: GatewayCommand;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * Where the command became durable: its Kafka partition and offset, or none on the
 * embedded bus, which has no offsets (its command log row is the record).
 */
export interface PublishAck {
  readonly partition: number | null;
  readonly offset: string | null;
}

export interface PublishRequest {
  /** The command; its canonical event is derived from it on the way into the store (command-event.ts). */
  readonly command: CommandMessage;
  /**
   * Hears that the command became durable after publish() had rejected for its time bound:
   * a send already under way when the bound came, which the producer went on retrying.
   */
  readonly onLateAck?: (ack: PublishAck) => void;
}

/**
 * The command publishing port. publish() resolves only once the command is durable (Kafka
 * acknowledged it from all in-sync replicas, or the embedded store wrote it and its
 * event), and rejects with UPSTREAM_UNAVAILABLE when that cannot happen within the
 * adapter's time bound.
 */
export interface CommandPublisher {
  publish(request: PublishRequest): Promise<PublishAck>;
  close(): Promise<void>;
}
