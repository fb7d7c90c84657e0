import type { CanonicalEvent } from '../generated/schema-types.js';

/** One command as it goes onto its topic. */
export interface CommandMessage {
  readonly topic: string;
  /** Partition key: device_id for enrollments, fleet_id for edge policy, so each stays ordered. */
  readonly key: string;
  readonly commandId: string;
  readonly value: object;
  readonly headers: Readonly<Record<string, string>>;
}

export interface PublishRequest {
  readonly command: CommandMessage;
  /** The canonical event that announces the command on the event feed. */
  readonly event: CanonicalEvent;
}

/**
 * The command publishing port. publish() resolves only once the command and its event
 * are durable (Kafka acknowledged both, or the embedded store wrote both), and rejects
 * with UPSTREAM_UNAVAILABLE when that cannot happen within the adapter's time bound.
 */
export interface CommandPublisher {
  publish(request: PublishRequest): Promise<void>;
  close(): Promise<void>;
}
