import type { TailPosition } from '../../store/event-store.js';
import type { ClosingNotice, TailRequest, TailSink } from './live-tail-types.js';

/** One open stream's state, shared by its own reads (catching up) and the fan-out (live). */
export interface TailStream {
  readonly request: TailRequest;
  readonly sink: TailSink;
  /** Its project, as projectKey() spells it. */
  readonly key: string;
  readonly controller: AbortController;
  /** While live: the horizon it joined at; the shared read may bring rows up to it that it already had. */
  joinedAt: TailPosition | undefined;
  /** When it last sent a line (performance.now()), for heartbeats. */
  lastLine: number;
  /** Why the gateway ended it, if it did. */
  notice: ClosingNotice | undefined;
}
