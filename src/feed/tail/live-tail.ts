import { NIL_UUID } from '../../ids/uuid.js';
import type { Logger } from '../../observability/logger.js';
import type { EventStore, TailPosition } from '../../store/event-store.js';
import type { LiveTail, LiveTailMetrics, LiveTailSettings } from './live-tail-types.js';
import { createSharedPoller, type StoreHorizon } from './shared-poller.js';
import { createSharedReads } from '../shared-reads.js';
import type { StoredBatches } from '../stored-batches.js';
import { createTailCaps } from './tail-caps.js';
import { catchUp } from './tail-catch-up.js';
import { createTailFanOut } from './tail-fan-out.js';
import { hidingFrom, type HiddenEvent } from './tail-hiding.js';
import { projectKey } from './tail-matching.js';
import { SHUTDOWN_NOTICE, shuttingDown } from './tail-notices.js';
import type { TailStream } from './tail-stream.js';

export type { ClosingNotice, LiveTail, LiveTailMetrics, LiveTailSettings, TailHandle, TailMessage, TailRequest, TailSink } from './live-tail-types.js';
export { SLOW_READER_NOTICE } from './tail-notices.js';
export { TAIL_BATCH_ROWS } from './tail-catch-up.js';

/**
 * The live tail (docs/decisions/live-tail.md). Streams share their reads: one loop per
 * process (shared-poller.ts) reads, once per poll interval, what became visible since its
 * last read for every project that has a live stream, and the fan-out (tail-fan-out.ts)
 * hands each stream the rows of its project that match its filters. A stream that starts
 * behind that shared position (a resume with Last-Event-ID, or one that started while a
 * read was in flight) first reads on its own (tail-catch-up.ts) until it reaches a horizon
 * at or after the shared position, and joins there (tail-join.ts). So the store's reads
 * per second depend on the number of streams catching up, not on the number open.
 */
export function createLiveTail(deps: {
  store: EventStore;
  settings: LiveTailSettings;
  logger: Logger;
  metrics?: LiveTailMetrics | undefined;
  /** Where this process ingests: its inserts, so the shared read follows them past the horizon (shared-poller.ts). */
  stored?: StoredBatches | undefined;
  /** Events no stream may carry: those of an erased scope (tail-hiding.ts). */
  hidden?: HiddenEvent | undefined;
}): LiveTail {
  const { settings, logger, metrics } = deps;
  const store = deps.hidden === undefined ? deps.store : hidingFrom(deps.store, deps.hidden);
  const caps = createTailCaps(settings);
  const open = new Map<TailStream, Promise<void>>();
  const closed = new AbortController();
  let catchingUp = 0;

  function report(): void {
    metrics?.tailStreams.set({ state: 'live' }, fanOut.streams);
    metrics?.tailStreams.set({ state: 'catching_up' }, catchingUp);
  }

  const fanOut = createTailFanOut({ settings, logger, metrics, changed: report });
  // One clock query for every stream starting at the same moment, and for the shared read beside them.
  const horizons = createSharedReads<StoreHorizon>();
  const storeHorizon = () =>
    horizons.read('horizon', async () => {
      const askedAt = performance.now();
      return { text: await store.tailHorizon(settings.settleMs), askedAt };
    });
  const horizon = async () => (await storeHorizon()).text;
  const poller = createSharedPoller({ store, settings, logger, metrics, fanOut, horizon: storeHorizon, stored: deps.stored, closed: closed.signal });

  async function run(stream: TailStream, start: TailPosition): Promise<void> {
    catchingUp += 1;
    report();
    let joined = false;
    try {
      joined = await catchUp(stream, start, { store, settings, logger, metrics, poller, horizon, closed: closed.signal });
    } finally {
      catchingUp -= 1;
      report();
    }
    if (!joined) return;
    // Live: the shared loop feeds it until it is stopped.
    const signal = stream.controller.signal;
    if (!signal.aborted) await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    fanOut.leave(stream);
  }

  return {
    async start(request, sink) {
      if (closed.signal.aborted) throw shuttingDown();
      const freeSlots = caps.take(request);
      let start: TailPosition;
      try {
        // (horizon, NIL) sorts before every event ingested at the horizon: they are all new to this stream.
        start = request.after ?? { ingestedAt: await horizon(), id: NIL_UUID };
        if (closed.signal.aborted) throw shuttingDown();
      } catch (error) {
        freeSlots();
        throw error;
      }
      const stream: TailStream = {
        request,
        sink,
        key: projectKey(request.orgId, request.projectId),
        controller: new AbortController(),
        joinedAt: undefined,
        lastLine: performance.now(),
        notice: undefined,
      };
      const done = run(stream, start)
        .catch((error: unknown) => (request.log ?? logger).error({ err: error, orgId: request.orgId, projectId: request.projectId }, 'live tail stopped by a fault'))
        .finally(() => {
          fanOut.leave(stream);
          sink.end(stream.notice);
          freeSlots();
          open.delete(stream);
        });
      open.set(stream, done);
      return { stop: () => stream.controller.abort(), done };
    },
    async closeAll() {
      for (const [stream] of open) {
        stream.notice ??= SHUTDOWN_NOTICE;
        stream.controller.abort();
      }
      closed.abort();
      await Promise.all([...open.values(), poller.stopped()]);
    },
    get stats() {
      return { streams: open.size, live: fanOut.streams, catchingUp, projects: fanOut.size };
    },
  };
}
