import type { Logger } from '../../observability/logger.js';
import type { TailedEvent, TailPosition } from '../../store/event-store.js';
import type { LiveTailMetrics, LiveTailSettings } from './live-tail-types.js';
import { afterHorizon, matchesFilters, messagesOf, projectKey } from './tail-matching.js';
import { SLOW_READER_NOTICE } from './tail-notices.js';
import type { TailStream } from './tail-stream.js';

/**
 * The live streams by project, and what hands them their rows in memory: each stream gets
 * the rows of its project that match its filters, never waiting for a client, and a
 * stream whose client has not taken what it was sent is closed instead of buffered.
 */
export interface TailFanOut {
  /** Makes the stream live at `at`, a horizon at or after the shared position. */
  join(stream: TailStream, at: TailPosition): void;
  leave(stream: TailStream): void;
  /** Hands a shared read's rows, in ingestion order, to the live streams they match. */
  send(events: readonly TailedEvent[]): void;
  /** A heartbeat to each live stream that has sent nothing for STREAM_HEARTBEAT_MS. */
  heartbeats(): void;
  /** Projects with a live stream, as projectKey() spells them. */
  projects(): IterableIterator<string>;
  /** Projects with a live stream. */
  readonly size: number;
  /** Live streams. */
  readonly streams: number;
}

export function createTailFanOut(deps: {
  settings: Pick<LiveTailSettings, 'heartbeatMs' | 'maxBufferBytes'>;
  logger: Logger;
  metrics?: LiveTailMetrics | undefined;
  /** Told whenever the number of live streams changes. */
  changed: () => void;
}): TailFanOut {
  const { settings, logger, metrics, changed } = deps;
  const live = new Map<string, Set<TailStream>>();
  let count = 0;

  /**
   * Closes a stream whose client has not taken what it was sent before: asked before each
   * write, so one large batch to a client that reads is never taken for slowness, and a
   * stream holds at most the bound plus one batch.
   */
  function tooSlow(stream: TailStream): boolean {
    if (stream.controller.signal.aborted) return true;
    if (stream.sink.queuedBytes <= settings.maxBufferBytes) return false;
    stream.notice = SLOW_READER_NOTICE;
    metrics?.tailSlowClosed.inc();
    (stream.request.log ?? logger).info({ orgId: stream.request.orgId, projectId: stream.request.projectId, queuedBytes: stream.sink.queuedBytes }, 'live tail closed: client too slow');
    stream.controller.abort();
    return true;
  }

  return {
    join(stream, at) {
      stream.joinedAt = at;
      let streams = live.get(stream.key);
      if (streams === undefined) live.set(stream.key, (streams = new Set()));
      streams.add(stream);
      count += 1;
      changed();
    },
    leave(stream) {
      const streams = live.get(stream.key);
      if (streams === undefined || !streams.delete(stream)) return;
      if (streams.size === 0) live.delete(stream.key);
      count -= 1;
      changed();
    },
    send(events) {
      const byProject = new Map<string, TailedEvent[]>();
      for (const e of events) {
        const key = projectKey(e.event.org_id, e.event.project_id);
        let list = byProject.get(key);
        if (list === undefined) byProject.set(key, (list = []));
        list.push(e);
      }
      const now = performance.now();
      for (const [key, projectEvents] of byProject) {
        const streams = live.get(key);
        if (streams === undefined) continue;
        const messages = messagesOf(projectEvents);
        for (const stream of streams) {
          const joinedAt = stream.joinedAt;
          const selected = messages.filter(
            (m, i) => (joinedAt === undefined || afterHorizon(projectEvents[i]!.position, joinedAt)) && matchesFilters(stream.request.filters, m.event),
          );
          if (selected.length === 0 || tooSlow(stream)) continue;
          stream.sink.send(selected);
          stream.lastLine = now;
        }
      }
    },
    heartbeats() {
      const now = performance.now();
      for (const streams of live.values()) {
        for (const stream of streams) {
          if (now - stream.lastLine < settings.heartbeatMs || tooSlow(stream)) continue;
          stream.sink.heartbeat();
          stream.lastLine = now;
        }
      }
    },
    projects: () => live.keys(),
    get size() {
      return live.size;
    },
    get streams() {
      return count;
    },
  };
}
