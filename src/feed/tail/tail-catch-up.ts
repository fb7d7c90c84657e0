import { NIL_UUID } from '../../ids/uuid.js';
import type { Logger } from '../../observability/logger.js';
import type { EventStore, TailBatch, TailPosition } from '../../store/event-store.js';
import { pause, unlessAborted } from '../abortable-waits.js';
import type { LiveTailMetrics, LiveTailSettings } from './live-tail-types.js';
import { MAX_RETRY_DELAY_MS, type SharedPoller } from './shared-poller.js';
import { messagesOf } from './tail-matching.js';
import type { TailStream } from './tail-stream.js';

/** Rows per private poll: a stream catching up reads in steps of this and polls again at once. */
export const TAIL_BATCH_ROWS = 500;

/**
 * A stream's own reads, from its start until it joins the shared read; heartbeats
 * included. Resolves true once it is live, false when it or the gateway closed first.
 */
export async function catchUp(
  stream: TailStream,
  start: TailPosition,
  deps: {
    store: EventStore;
    settings: Pick<LiveTailSettings, 'pollMs' | 'heartbeatMs'>;
    logger: Logger;
    metrics?: LiveTailMetrics | undefined;
    poller: Pick<SharedPoller, 'tryJoin'>;
    horizon: () => Promise<string>;
    closed: AbortSignal;
  },
): Promise<boolean> {
  const { store, settings, metrics, poller, horizon, closed } = deps;
  const { request, sink } = stream;
  const signal = stream.controller.signal;
  const scope = { orgId: request.orgId, projectId: request.projectId, filters: request.filters };
  const log = request.log ?? deps.logger;
  let position = start;
  let failures = 0;
  while (!signal.aborted && !closed.aborted) {
    // Only a position on a horizon can join: rows at the same instant need no UUID order in memory.
    if (position.id === NIL_UUID) {
      const joined = await poller.tryJoin(stream, position);
      if (joined === true) return true;
      if (joined === false) break;
      if (joined !== position) {
        // It read part of the gap: let the client take that, then try again from there.
        position = joined;
        await unlessAborted(sink.drained(), signal);
        continue;
      }
      // The shared read is mid-page: read on alone past it.
    }
    let batch: TailBatch | undefined;
    try {
      const before = await horizon();
      metrics?.tailStoreReads.inc({ kind: 'own' });
      batch = await store.tailEvents({ ...scope, after: position, before, limit: TAIL_BATCH_ROWS });
      failures = 0;
    } catch (error) {
      if (signal.aborted) break;
      failures += 1;
      log.warn({ err: error, orgId: request.orgId, projectId: request.projectId, failures }, 'live tail poll failed; retrying');
    }
    if (signal.aborted) break;
    if (performance.now() - stream.lastLine >= settings.heartbeatMs) {
      sink.heartbeat();
      stream.lastLine = performance.now();
    }
    if (batch !== undefined) {
      if (batch.events.length > 0) {
        sink.send(messagesOf(batch.events));
        stream.lastLine = performance.now();
        // Catching up, a stream reads only as fast as its client takes the rows: its queue stays one batch.
        await unlessAborted(sink.drained(), signal);
      }
      position = batch.next;
      // More rows waiting, or on a horizon and so ready to join: go on at once.
      if (batch.full || position.id === NIL_UUID) continue;
    }
    // A failed read, or a resume position newer than the horizon: wait for the store or for time to pass.
    const delay = Math.max(settings.pollMs, Math.min(MAX_RETRY_DELAY_MS, settings.pollMs * 2 ** failures));
    await pause(delay, signal);
  }
  return false;
}
