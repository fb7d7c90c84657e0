import type { LiveTailConfig } from './live-tail-settings.js';
import type { CanonicalEvent } from '../../generated/schema-types.js';
import type { GatewayMetrics } from '../../metrics/gateway-metrics.js';
import type { Logger } from '../../observability/logger.js';
import type { TailFilters, TailPosition } from '../../store/event-store.js';

/** The live tail's settings, as the configuration parses them (STREAM_* in docs/configuration.md). */
export type LiveTailSettings = LiveTailConfig;

export interface TailRequest {
  readonly orgId: string;
  readonly projectId: string;
  /** Who opens it: the token's subject, for the per-caller cap. */
  readonly caller: string;
  readonly filters: TailFilters;
  /** Resume strictly after this position (Last-Event-ID); undefined starts at the horizon, so only new events come. */
  readonly after: TailPosition | undefined;
  /** The request's logger, so a failing poll's log lines carry its request id; the service's own otherwise. */
  readonly log?: Logger | undefined;
}

export interface TailMessage {
  /** The opaque position token of the event, for Last-Event-ID. */
  readonly id: string;
  readonly event: CanonicalEvent;
  /** The event's JSON text, made once per event however many streams send it. */
  readonly json: string;
}

/** Why the gateway ends a stream, told to the client as its last message. */
export interface ClosingNotice {
  readonly message: string;
  readonly detail: string;
}

/** Where a stream's messages go; the HTTP layer frames them as Server-Sent Events. */
export interface TailSink {
  /** Queues the messages for the client; never waits, so one slow client holds no one else up. */
  send(messages: readonly TailMessage[]): void;
  heartbeat(): void;
  /** Bytes queued for the client and not yet taken by its connection. */
  readonly queuedBytes: number;
  /** Resolves once the client has taken what was queued, or went away. */
  drained(): Promise<void>;
  /** The tail stopped: end the response, with `notice` as the last message when the gateway ends it. */
  end(notice?: ClosingNotice): void;
}

export interface TailHandle {
  /** Stops the stream, e.g. because the client went away; the sink is ended. */
  stop(): void;
  /** Resolves once the stream has ended and its slots are free again. */
  readonly done: Promise<void>;
}

export interface LiveTail {
  /**
   * Takes the stream's slots (process, caller, organization), fixes where the tail starts
   * and keeps it fed until stopped. Throws TOO_MANY_STREAMS when a cap is reached, and
   * UPSTREAM_UNAVAILABLE while closing or when the store cannot tell its clock.
   */
  start(request: TailRequest, sink: TailSink): Promise<TailHandle>;
  /** Ends every open stream and waits until each has stopped; starts after this are refused. */
  closeAll(): Promise<void>;
  /** What is open now, for metrics and tests. */
  readonly stats: { readonly streams: number; readonly live: number; readonly catchingUp: number; readonly projects: number };
}

/** What the live tail reports on /metrics; the gateway's registry provides it. */
export type LiveTailMetrics = Pick<GatewayMetrics, 'tailStoreReads' | 'tailSlowClosed' | 'tailStreams'>;
