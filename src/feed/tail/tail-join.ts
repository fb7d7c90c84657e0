import { NIL_UUID } from '../../ids/uuid.js';
import type { Logger } from '../../observability/logger.js';
import type { EventStore, TailBatch, TailPosition } from '../../store/event-store.js';
import type { LiveTailMetrics } from './live-tail-types.js';
import type { TailFanOut } from './tail-fan-out.js';
import { afterHorizon, horizonAtOrAfter, matchesFilters, messagesOf, projectKey, scopeOf } from './tail-matching.js';
import type { TailStream } from './tail-stream.js';

/** Rows per shared read: every tailed project's new rows of one poll interval fit in one read at thousands of events a second. */
export const SHARED_BATCH_ROWS = 5000;

/** A stream asking to join the shared read. */
export interface Joiner {
  readonly stream: TailStream;
  /** The horizon the stream has read up to. */
  readonly at: TailPosition;
  /** True once live; otherwise where the stream is now, to go on with its own reads; false when it or the gateway closes. */
  readonly resolve: (outcome: TailPosition | boolean) => void;
}

/**
 * Lets streams join at `from`, the shared position, which does not move meanwhile (the
 * shared loop calls this between its reads). Those at or after it join at once. Those
 * behind it get the rows between from one read for all of them, up to the shared
 * position: so joining needs no race against the shared loop, and a reconnecting crowd
 * costs one read, not one each.
 */
export async function admitAt(
  from: TailPosition,
  joiners: readonly Joiner[],
  deps: { store: EventStore; fanOut: TailFanOut; logger: Logger; metrics?: LiveTailMetrics | undefined; closing: () => boolean },
): Promise<void> {
  const { store, fanOut, logger, metrics, closing } = deps;
  const behind: Joiner[] = [];
  for (const j of joiners) {
    if (horizonAtOrAfter(j.at, from)) {
      fanOut.join(j.stream, j.at);
      j.resolve(true);
    } else behind.push(j);
  }
  if (behind.length === 0) return;
  // Mid-page, the shared position is a row: reading up to it would need rows of one instant ordered by id.
  if (from.id !== NIL_UUID) {
    for (const j of behind) j.resolve(j.at);
    return;
  }
  const after = behind.reduce((min, j) => (j.at.ingestedAt < min.ingestedAt ? j.at : min), behind[0]!.at);
  let gap: TailBatch;
  try {
    metrics?.tailStoreReads.inc({ kind: 'join' });
    gap = await store.tailProjects({
      scopes: [...new Set(behind.map((j) => j.stream.key))].map(scopeOf),
      after,
      before: from.ingestedAt,
      limit: SHARED_BATCH_ROWS,
    });
  } catch (error) {
    logger.warn({ err: error, streams: behind.length }, 'live tail join read failed; the streams read on their own');
    for (const j of behind) j.resolve(j.at);
    return;
  }
  // A full read covers every row ingested before its last row's instant: that instant is a horizon they can stand on.
  const upTo = gap.full ? { ingestedAt: gap.next.ingestedAt, id: NIL_UUID } : from;
  const messages = messagesOf(gap.events);
  for (const j of behind) {
    if (j.stream.controller.signal.aborted || closing()) {
      j.resolve(false);
      continue;
    }
    const selected = messages.filter(
      (m, i) =>
        projectKey(m.event.org_id, m.event.project_id) === j.stream.key &&
        gap.events[i]!.position.ingestedAt < upTo.ingestedAt &&
        afterHorizon(gap.events[i]!.position, j.at) &&
        matchesFilters(j.stream.request.filters, m.event),
    );
    if (selected.length > 0) {
      j.stream.sink.send(selected);
      j.stream.lastLine = performance.now();
    }
    if (upTo === from) {
      fanOut.join(j.stream, from);
      j.resolve(true);
    } else j.resolve(horizonAtOrAfter(j.at, upTo) ? j.at : upTo);
  }
}
